"""What the sandboxed child sends back, read here in work bounded by the expected values.

The answer runs in the child, so every byte of its results pipe is the attacker's. Each line is one
JSON array, never an object: ``["defined"]``, ``["error", TEXT]``, ``["raised", TEXT]``,
``["unplain", TEXT]`` or ``["value", V]``, where V is plain data as workloads/grading/sandbox_child.py
writes it: a JSON scalar, ``["l", *items]`` for a list, ``["t", *items]`` for a tuple, and
``["d", k1, v1, k2, v2, ...]`` for a dict.

The trusted side stays linear in what it reads, whatever the answer sends:
- bytes: a value line longer than any line of a value equal to the expected one (``bound``, from
  the expected value alone) is not parsed, since it cannot be equal; a text line past
  ``TEXT_BYTES`` is malformed; the grader reads at most 8 MiB in all (workloads/grading/sandbox.py);
- depth: ``MAX_DEPTH`` levels, as the child's ``plain`` allows;
- no hash table keyed by the answer: the parser refuses JSON objects, a dict comes back as ``Pairs``
  (its pairs in a tuple), and ``equal`` looks each sent key up in the expected dict's own table,
  whose size the test's author chose. (Rebuilding a sent dict of 270k int keys that all hash alike
  held the trusted side for 31 minutes: each insertion walked every earlier key.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator

MAX_DEPTH = 100
TEXT_BYTES = 8192  # the child cuts its texts at 500 characters, each at most 12 bytes once escaped
NUMBER_BYTES = 330  # a float's repr, or the digits of an int equal to one (1.8e308 has 309)
RECORD_BYTES = 16  # '["value",' and ']'
VALUE_HEAD = b'["value",'
TEXT_KINDS = ("defined", "error", "raised", "unplain")


class Malformed(ValueError):
    """The child sent something that is not a result record of plain data."""


class Pairs:
    """A dict the child sent, as its (key, value) pairs; never built into a dict here."""

    __slots__ = ("items",)
    __hash__ = None  # type: ignore[assignment]  # a dict is no key: a sent key holding one is malformed

    def __init__(self, items: tuple[tuple[object, object], ...]) -> None:
        self.items = items


class _TooLarge:
    """A value line past the bound of the expected value: equal to nothing that test expects."""

    def __repr__(self) -> str:
        return "TOO_LARGE"


TOO_LARGE = _TooLarge()


def lines(data: bytes) -> Iterator[bytes]:
    """The complete lines of ``data``, one at a time (a last line without its newline never finished)."""
    start = 0
    while (end := data.find(b"\n", start)) != -1:
        yield data[start:end]
        start = end + 1


def bound(expected: object) -> int:
    """The most bytes the child's encoding of any plain value equal to ``expected`` can take: the
    same containers of the same lengths; a number, bool or None may come as another type of number
    (1 == 1.0 == True, and 1e308 == an int of 309 digits); a string is at most 12 bytes a character.
    (``expected`` is plain data of exact builtin types: checks.parse_test made it.)"""
    if isinstance(expected, str):
        return 12 * len(expected) + 2
    if isinstance(expected, (list, tuple)):
        return 8 + sum(bound(item) + 1 for item in expected)
    if isinstance(expected, dict):
        return 8 + sum(bound(k) + bound(v) + 2 for k, v in expected.items())
    if type(expected) is int:
        return NUMBER_BYTES + expected.bit_length() // 3
    return NUMBER_BYTES


def _no_objects(pairs: list) -> object:
    raise Malformed("a JSON object")


def _parse(line: bytes) -> list:
    try:
        record = json.loads(line, object_pairs_hook=_no_objects)
    except (ValueError, RecursionError):  # Malformed included: nothing here is built from an object
        raise Malformed("a line that is not a record of JSON arrays") from None
    if type(record) is not list or not record or record[0] not in (*TEXT_KINDS, "value"):
        raise Malformed("an unknown record")
    return record


def text_record(line: bytes) -> tuple[str, str | None]:
    """(kind, text) of a record that is not a value: ``defined`` (no text), ``error``, ``raised``, ``unplain``."""
    if len(line) > TEXT_BYTES:
        raise Malformed(f"a record longer than {TEXT_BYTES} bytes")
    record = _parse(line)
    kind = record[0]
    if kind == "defined" and len(record) == 1:
        return kind, None
    if kind in TEXT_KINDS[1:] and len(record) == 2 and type(record[1]) is str:
        return kind, record[1]
    raise Malformed("an unknown record")


def value_record(line: bytes, limit: int) -> object:
    """The value a ``["value", V]`` line carries, or ``TOO_LARGE`` past ``limit`` (a ``bound``) bytes of V."""
    if len(line) > limit + RECORD_BYTES:
        return TOO_LARGE
    record = _parse(line)
    if record[0] != "value" or len(record) != 2:
        raise Malformed("an unknown record")
    return decode(record[1])


def decode(wire: object, depth: int = 0) -> object:
    """Plain data from its wire form: exact builtin scalars, lists, tuples, and ``Pairs`` for dicts."""
    if wire is None or type(wire) in (bool, int, float, str):
        return wire
    if type(wire) is not list or not wire:
        raise Malformed(f"not plain data: {type(wire).__name__}")
    if depth > MAX_DEPTH:
        raise Malformed("nested too deeply")
    tag, items = wire[0], wire[1:]
    if tag == "l":
        return [decode(item, depth + 1) for item in items]
    if tag == "t":
        return tuple(decode(item, depth + 1) for item in items)
    if tag == "d" and len(items) % 2 == 0:
        return Pairs(tuple((_key(items[i], depth + 1), decode(items[i + 1], depth + 1))
                           for i in range(0, len(items), 2)))
    raise Malformed("not plain data: an unknown container")


def _key(wire: object, depth: int) -> object:
    key = decode(wire, depth)
    if not _hashable(key):
        raise Malformed("a dict key that cannot be a key")
    return key


def _hashable(value: object) -> bool:
    """A key a real dict could hold: scalars, and tuples of them (decided without hashing it)."""
    if isinstance(value, tuple):
        return all(_hashable(item) for item in value)
    return not isinstance(value, (list, Pairs))


def equal(got: object, want: object) -> bool:
    """``got == want`` for ``got`` from ``decode`` and ``want`` plain data, as Python compares plain
    data, without a hash table of ``got``'s making: a sent dict matches the expected one when it has
    as many pairs and each key, looked up in the expected dict, is there once with an equal value.
    Both hold exact builtin types only, so ``isinstance`` here is ``type() is``."""
    if got is TOO_LARGE:
        return False
    if isinstance(want, dict):
        return isinstance(got, Pairs) and _same_dict(got, want)
    if isinstance(want, (list, tuple)):
        return (type(got) is type(want) and len(got) == len(want)
                and all(equal(g, w) for g, w in zip(got, want, strict=True)))
    return not isinstance(got, (list, tuple, Pairs)) and got == want


def _same_dict(got: Pairs, want: dict) -> bool:
    if len(got.items) != len(want):
        return False
    position = {key: n for n, key in enumerate(want)}  # the expected keys' table: its size is the test's
    wanted = list(want.values())
    seen = bytearray(len(want))
    for key, value in got.items:
        n = position.get(key)
        if n is None or seen[n] or not equal(value, wanted[n]):
            return False  # a key sent twice (1 and True, say) is no real dict
        seen[n] = 1
    return True

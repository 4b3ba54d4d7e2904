"""The values of the records a run leaves (cells.jsonl, responses.jsonl, results.jsonl), checked
where they are read back, in one place for every reader.

``ddtune report`` refuses a file whose record does not hold (a UsageError naming the file, the
line and the field: a report over it would be wrong); a ``--resume`` skips such a record with a
note and measures (or asks) it again (``usable``): one bad line costs only itself. A number must be
finite and an integer fit in 64 bits (backends.core.fields.expect), so a 400-digit count, NaN or
-3e40 never reaches the statistics, a printout or a JSON document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from backends.core import Note
from backends.core import DdtuneError, UsageError
from backends.core import INT64_MAX, bounded, expect, fail, key_name, shown

FIX = "give files ddtune wrote (see docs/results-schema.md), or fix the value"
RESUME_FIX = "start a new run (the file was edited or is not one ddtune wrote)"
# The largest setting a plan read back for a resume may hold: far above any real run, far below what
# would loop for ever or fill memory (range(10**400) workers, a 10**18-slot schedule).
PLAUSIBLE = {"context": 100_000_000, "concurrency": 100_000, "max_tokens": 100_000_000,
             "requests": 100_000_000, "repeats": 100_000, "waves": 100_000, "eta": 1_000, "rungs": 100,
             "passes": 1_000, "lanes": 4_096, "restarts": 10_000_000, "points": 100_000, "seed": INT64_MAX}
MAX_TOK_S = 1e9  # tok/s a measurement may say: a thousand times the fastest server
MAX_SECONDS = 7 * 24 * 3600.0  # a restart or a phase read back: one that lasted a week is not one
MAX_TIME = 2.0**40  # a Unix time in seconds read back: past the year 36000 it is not one
VERDICTS = ("pass", "fail", "error", "timeout", "no_code", "truncated")
T = TypeVar("T")


def field(where: str, record: dict, key: str, kinds: type | tuple[type, ...], minimum: float | None = None,
           required: bool = False) -> Any:
    """record[key] checked: absent or null is None (unless required); a number must be finite and
    at least ``minimum``."""
    value = record.get(key)
    if value is None and not required:
        return None
    value = expect(where, f"field {key_name(key)!r}", value, kinds, FIX, UsageError, True)
    if minimum is not None and value < minimum:
        raise fail(where, f"field {key_name(key)!r}", f"must be >= {minimum}, got {value}", FIX, UsageError)
    return value


def numbers(where: str, record: dict, key: str, inner: tuple[str, ...] | None = None) -> None:
    """record[key] is null or an object whose ``inner`` keys are null or numbers >= 0 (with
    ``inner`` None: all its values are numbers >= 0)."""
    table = field(where, record, key, dict)
    for name in (table if inner is None else inner) if table else ():
        field(f"{where} {key}", table, name, float, minimum=0, required=inner is None)


def counts(where: str, record: dict, key: str) -> dict | None:
    table = field(where, record, key, dict)
    for name in table or ():
        field(f"{where} {key}", table, name, int, minimum=0)
    return table


def cell(where: str, record: Any) -> dict:
    """A cells.jsonl record, checked for every field the report reads."""
    expect(where, "cell", record, dict, FIX, UsageError, True)
    field(where, record, "context", int, minimum=0, required=True)  # 0: each prompt as its source wrote it
    field(where, record, "concurrency", int, minimum=1, required=True)
    field(where, record, "prompts", str)
    field(where, record, "request_rate", float, minimum=0)
    for key in ("requests", "errors"):
        field(where, record, key, int, minimum=0)
    field(where, record, "output_tok_s", float, minimum=0)
    numbers(where, record, "acceptance", ("mean", "total"))
    numbers(where, record, "ttft_ms", ("p50", "p95"))
    numbers(where, record, "itl_ms", ("p50", "p95"))
    numbers(where, record, "itl_token_ms", ("p50", "p95"))
    counts(where, record, "verdicts")
    return record


def response(where: str, record: dict) -> dict:
    for key in ("output_tokens", "e2e_s", "spec_verify_ct"):
        field(where, record, key, float, minimum=0)
    return record


def result(where: str, record: Any) -> dict:
    """A results.jsonl record (one graded eval problem): its problem id, a known verdict, a text detail."""
    expect(where, "result", record, dict, FIX, UsageError, True)
    field(where, record, "problem", str, required=True)
    verdict = field(where, record, "verdict", str, required=True)
    if verdict not in VERDICTS:
        raise fail(where, "field 'verdict'", f"{verdict[:40]!r} is not one of {', '.join(VERDICTS)}", FIX, UsageError)
    field(where, record, "detail", str)
    return record


def plausible(value: Any, name: str, what: str | None = None, low: int = 1) -> int:
    """An integer setting of a plan read back, from ``low`` to its PLAUSIBLE bound (ValueError else)."""
    return bounded(value, low, PLAUSIBLE[name], what or name, integer=True)


def read_plan(where: str, parse: Callable[[], T], what: str = "plan", hint: str = RESUME_FIX) -> T:
    """``parse()`` of a plan read back for a resume: any way it is not a ``what`` ddtune wrote (a key
    missing, a wrong type, an absurd number, a rule of the plan's own) is one UsageError naming
    ``where``, never a traceback."""
    try:
        return parse()
    except DdtuneError as exc:  # a plan's own rule (a sweep of no configuration), said without the file
        why = shown(exc.message, 120)
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        why = f"{type(exc).__name__}: {shown(str(exc), 120)}"
    raise UsageError(f"{where}: not a {what} ddtune wrote ({why})", hint=hint)


def clean_numbers(value: Any, where: str = "", dropped: list[str] | None = None) -> Any:
    """``value`` (a summary read back) with every number that is not finite, non-negative and
    plausible (at most 1e300; an integer within 64 bits) replaced by null, each one's place named in
    ``dropped``: a 400-digit count or NaN shown as "-", never overflowing a ratio or printed as nan."""
    dropped = [] if dropped is None else dropped
    if isinstance(value, dict):
        return {k: clean_numbers(v, f"{where}.{key_name(k)}" if where else key_name(k), dropped)
                for k, v in value.items()}  # a key is named as JSON would write it: no line break or escape
    if isinstance(value, list):
        return [clean_numbers(v, f"{where}[{i}]", dropped) for i, v in enumerate(value)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return bounded(value, 0, INT64_MAX if isinstance(value, int) else 1e300, where, isinstance(value, int))
        except ValueError:
            dropped.append(where)
            return None
    return value


def usable(records: Iterable[T], check: Callable[[str, T], object], where: str, note: Note | None,
           redo: str) -> list[T]:
    """The records that pass ``check`` (a resume goes on from them); those that do not are left out
    and ``note`` is told which and why, with ``redo``: what happens to them instead."""
    out, bad = [], []
    for n, record in enumerate(records, 1):
        try:
            check(f"{where} record {n}", record)
        except DdtuneError as exc:
            bad.append(exc.message)
            continue
        out.append(record)
    if bad and note is not None:
        note(f"skipped {len(bad)} unusable record(s) of {where} ({bad[0]}{'; ...' if len(bad) > 1 else ''}): {redo}")
    return out

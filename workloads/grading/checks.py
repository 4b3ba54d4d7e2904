"""Hidden tests as (call, comparison, expected value): the sandbox computes the call, ddtune compares.

A test in presets/problems/coding.toml reads ``CALL == VALUE`` (or ``!=``, or ``is``/``is not``
with True, False or None), VALUE a Python literal of plain data. The sandboxed child only ever
sees CALL; VALUE stays in this process, so an answer that lies about what CALL returned can only
pass by guessing VALUE. The child sends results as JSON built from exact types (see
workloads/grading/sandbox_child.py); workloads/grading/sandbox_wire.py decodes nothing else, so no
object of the answer's making (an ``__eq__`` that is always true, an int subclass) ever reaches a
comparison here, and compares without hashing what the answer sent into a table.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from workloads.grading.sandbox_wire import bound, equal

OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}
SINGLETONS = (None, True, False)
MAX_DEPTH = 100
SHAPE_HINT = ("write each test as CALL == VALUE (or CALL is True/False/None), VALUE a literal of plain data "
              "(None, bool, int, float, str, list, tuple, dict)")


@dataclass(frozen=True)
class Check:
    source: str  # the test as written
    call: str  # the left-hand side: all the sandbox sees
    op: str
    expected: object
    bound: int  # the most bytes a sent value equal to ``expected`` can take (sandbox_wire.bound)

    def holds(self, value: object) -> bool:
        """``value`` comes from ``sandbox_wire.decode`` (or is its ``TOO_LARGE``): exact builtin types."""
        if self.op == "==":
            return equal(value, self.expected)
        if self.op == "!=":
            return not equal(value, self.expected)
        if self.op == "is":
            return value is self.expected
        return value is not self.expected


def is_plain(value: object, depth: int = 0) -> bool:
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return True
    if depth > MAX_DEPTH:
        return False
    if kind in (list, tuple):
        return all(is_plain(item, depth + 1) for item in value)  # type: ignore[attr-defined]
    if kind is dict:
        items = value.items()  # type: ignore[attr-defined]
        return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in items)
    return False


@functools.lru_cache(maxsize=4096)
def parse_test(source: str, function: str) -> Check:
    """Split one test; ``ValueError`` (a one-line reason) when it does not have the required shape.
    Kept per (test, function): the live load grades the same few problems' tests every second, and
    a Check is frozen (its expected value is only ever compared)."""
    try:
        body = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a Python expression ({exc.msg})") from None
    if not isinstance(body, ast.Compare) or len(body.ops) != 1 or type(body.ops[0]) not in OPS:
        raise ValueError("not of the form CALL == VALUE")
    op = OPS[type(body.ops[0])]
    try:
        expected = ast.literal_eval(body.comparators[0])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("the right-hand side is not a literal") from None
    if not is_plain(expected):
        raise ValueError(f"the right-hand side is a {type(expected).__name__}, not plain data")
    if op in ("is", "is not") and not any(expected is s for s in SINGLETONS):
        raise ValueError(f"'{op}' compares only with True, False or None")
    if not any(isinstance(node, ast.Name) and node.id == function for node in ast.walk(body.left)):
        raise ValueError(f"the left-hand side does not call {function}")
    return Check(source, ast.unparse(body.left), op, expected, bound(expected))


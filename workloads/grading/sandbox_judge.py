"""The trusted side's verdict on what a sandboxed answer sent: its results, read as plain data and
compared with the expected values only this process knows (workloads/grading/sandbox.py runs the answer).
A lying child can only pass by guessing the expected values; anything malformed is an ``error``.
What it sent is read in work bounded by the expected values (workloads/grading/sandbox_wire.py)."""

from __future__ import annotations

import signal

from workloads.grading.checks import Check
from workloads.grading.sandbox_wire import TOO_LARGE, VALUE_HEAD, Malformed, lines, text_record, value_record


def signal_of(returncode: int) -> int | None:
    """The signal that ended the child: negative for bwrap itself; bwrap reports a signalled child
    as 128 + n."""
    if returncode < 0:
        return -returncode
    if returncode > 128:
        return returncode - 128
    return None


def _clean(text: object) -> str:
    """Child-made text for a detail line: a string, printable, bounded."""
    if type(text) is not str:
        raise Malformed("a detail that is not a string")
    return "".join(c if c.isprintable() else "?" for c in text[:500])


def judge(checks: list[Check], data: bytes, stopped: tuple[str, str] | None, sig: int | None,
          returncode: int, output: str) -> tuple[str, str]:
    """The verdict from what the child sent, in test order. ``pass`` needs every result present,
    plain, and equal to the expected value that only this process knows."""
    total = len(checks)
    sent = lines(data)
    try:
        line = next(sent, None)
        first = text_record(line) if line is not None else None
        if first is not None and first[0] == "error":
            return "error", _clean(first[1])
        if first is not None and first[0] != "defined":
            raise Malformed("no definition record first")
        for n, check in enumerate(checks, 1):
            line = next(sent, None) if first is not None else None
            if line is None:
                return _ended(stopped, sig, returncode, output, f"before test {n} finished")
            if line.startswith(VALUE_HEAD):
                value = value_record(line, check.bound)
                if not check.holds(value):
                    why = "sent more than any value equal to the expected one: " if value is TOO_LARGE else ""
                    return "fail", f"test {n} of {total} failed: {why}{check.source}"
                continue
            kind, text = text_record(line)
            if kind == "raised":
                return "error", f"test {n} raised {_clean(text)}: {check.source}"
            if kind == "unplain":
                return "fail", f"test {n} of {total} failed: {_clean(text)}: {check.source}"
            raise Malformed("an unknown record")
        if next(sent, None) is not None:
            raise Malformed("more results than tests")
    except Malformed as exc:
        return "error", f"sandbox: malformed results from the answer ({exc})"
    if stopped is not None:
        return stopped
    return "pass", f"{total}/{total} tests passed"


def _ended(stopped: tuple[str, str] | None, sig: int | None, returncode: int, output: str,
           when: str) -> tuple[str, str]:
    if stopped is not None:
        return stopped
    if sig == signal.SIGXCPU:
        return "timeout", "CPU time limit exceeded"
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        return "error", f"sandbox process killed by signal {name} {when}"
    last = output.strip().splitlines()[-1:] or [""]
    return "error", f"sandbox process exited {returncode} {when} {last[0][:200]}".strip()

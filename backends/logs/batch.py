"""The scheduler's batch lines (``Decode batch, ...`` and ``Prefill batch, ...``) -> events, and the
``key: value, ...`` field readers that ``backends.logs.parse`` shares. Called only through
``logparse.parse_line``: each handler gets the message with its SGLang prefix already stripped.
"""

from __future__ import annotations

import re

from backends.logs.events import DecodeBatch, LogEvent, PrefillBatch

__all__ = ["decode_batch", "prefill_batch", "fields", "to_int", "to_float", "to_bool"]


_MOST = 2**53  # no count or figure in a log line comes near it; a larger one is not a number ddtune uses


def to_int(value: str | None) -> int | None:
    """A count from a log field: None unless it is an integer from 0 to 2**53 (the log is the
    server's text: a negative or 400-digit count would be stored, summed and drawn as it is)."""
    if value is None:
        return None
    value = value.strip().strip("'\"")
    try:
        number = int(value)
    except ValueError:
        return None
    return number if 0 <= number <= _MOST else None


def to_float(value: str | None) -> float | None:
    """A figure from a log field: None unless it is a finite number from 0 to 2**53 (no NaN, no inf)."""
    try:
        number = None if value is None else float(value)
    except ValueError:
        return None
    return number if number is not None and 0 <= number <= _MOST else None


def fields(text: str) -> dict[str, str]:
    """``#running-req: 3, token usage: 0.10, ...`` -> {"#running-req": "3", ...}."""
    out: dict[str, str] = {}
    for part in text.split(", "):
        key, sep, value = part.partition(": ")
        if sep:
            out[key.strip()] = value.strip().rstrip(",")
    return out


_BOOL_TOKEN = re.compile(r"(True|False)(?!\w)")


def to_bool(value: str | None) -> bool | None:
    """The ``True``/``False`` token at the start of ``value``, ignoring whatever follows it: a log
    cut mid-character leaves U+FFFD right after the token, and that must not turn True into False.
    None when there is no such token."""
    m = _BOOL_TOKEN.match(value.strip()) if value is not None else None
    return None if m is None else m.group(1) == "True"


_HEAD = re.compile(r"(?:Decode|Prefill) batch(?: \[(-?\d+)\])?[,.]")
# the KV pool a decode line counts in, by the first key present: hybrid SWA / mamba pools write
# ``#full token``, the plain pool ``#token``, a HiSparse-only pool ``#gpu token`` (its device tokens)
_POOLS = (("#full token", "full token usage"), ("#token", "token usage"), ("#gpu token", "gpu token usage"))


def _head(line: str) -> tuple[int | None, dict[str, str]] | None:
    """``Decode batch [12], k: v, ...`` -> (12, fields); the ``[N]`` is there when the server runs with
    SGLANG_LOG_FORWARD_ITERS (0.5.15+); ``Decode batch.`` is the old spelling."""
    m = _HEAD.match(line)
    if m is None:
        return None
    return (int(m.group(1)) if m.group(1) else None), fields(line[m.end():])


def _graph(f: dict[str, str]) -> bool | None:
    """``cuda graph: True``, or ``cpu/npu/musa graph:`` on those devices."""
    return to_bool(next((v for k, v in f.items() if k.endswith(" graph")), None))


def decode_batch(line: str, ts, ranks) -> LogEvent | None:
    head = _head(line)
    if head is None:
        return None
    forward_iter, f = head
    running = to_int(f.get("#running-req"))
    if running is None:
        return None
    count, usage = next((pool for pool in _POOLS if pool[0] in f), _POOLS[1])
    return DecodeBatch(
        running, to_int(f.get(count)), to_float(f.get(usage)),
        to_float(f.get("accept len")), to_float(f.get("accept rate")), _graph(f),
        to_float(f.get("gen throughput (token/s)")), to_int(f.get("#queue-req")),
        to_int(f.get("#swa token")), to_float(f.get("swa token usage")), forward_iter,
        to_float(f.get("cap len")), to_float(f.get("block accept len")), ts=ts, ranks=ranks,
    )


def prefill_batch(line: str, ts, ranks) -> LogEvent | None:
    head = _head(line)
    if head is None:
        return None
    forward_iter, f = head
    new_seq = to_int(f.get("#new-seq"))
    if new_seq is None:
        return None
    usage = f.get("token usage", f.get("full token usage"))  # hybrid SWA / mamba pools: the full pool's
    return PrefillBatch(
        new_seq, to_int(f.get("#new-token")), to_int(f.get("#cached-token")), to_float(usage),
        to_int(f.get("#running-req")), to_int(f.get("#queue-req")), _graph(f),
        to_float(f.get("input throughput (token/s)")), forward_iter, ts=ts, ranks=ranks,
    )

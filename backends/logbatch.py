"""The scheduler's batch lines (``Decode batch, ...`` and ``Prefill batch, ...``) -> events, and the
``key: value, ...`` field readers that ``backends.logparse`` shares. Called only through
``logparse.parse_line``: each handler gets the message with its SGLang prefix already stripped.
"""

from __future__ import annotations

import re

from backends.logevents import DecodeBatch, LogEvent, PrefillBatch

__all__ = ["decode_batch", "prefill_batch", "fields", "to_int", "to_float", "to_bool"]


def to_int(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip().strip("'\"")
    try:
        return int(value)
    except ValueError:
        return None


def to_float(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


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


def decode_batch(line: str, ts, ranks) -> LogEvent | None:
    if not line.startswith(("Decode batch,", "Decode batch.")):
        return None
    f = fields(line[13:])
    running = to_int(f.get("#running-req"))
    if running is None:
        return None
    graph = next((v for k, v in f.items() if k.endswith(" graph")), None)
    hybrid = "#full token" in f
    return DecodeBatch(
        running, to_int(f.get("#full token" if hybrid else "#token")),
        to_float(f.get("full token usage" if hybrid else "token usage")),
        to_float(f.get("accept len")), to_float(f.get("accept rate")), to_bool(graph),
        to_float(f.get("gen throughput (token/s)")), to_int(f.get("#queue-req")),
        to_int(f.get("#swa token")), to_float(f.get("swa token usage")), ts=ts, ranks=ranks,
    )


def prefill_batch(line: str, ts, ranks) -> LogEvent | None:
    if not line.startswith(("Prefill batch,", "Prefill batch.")):
        return None
    f = fields(line[14:])
    new_seq = to_int(f.get("#new-seq"))
    if new_seq is None:
        return None
    graph = next((v for k, v in f.items() if k.endswith(" graph")), None)
    return PrefillBatch(
        new_seq, to_int(f.get("#new-token")), to_int(f.get("#cached-token")), to_float(f.get("token usage")),
        to_int(f.get("#running-req")), to_int(f.get("#queue-req")), to_bool(graph),
        to_float(f.get("input throughput (token/s)")), ts=ts, ranks=ranks,
    )

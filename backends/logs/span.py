"""The ``Decode batch`` lines a stretch of a server log holds, read by byte offset: no tail.

A headless command that measures over an interval (a bench cell, a ``ddtune load`` tick) notes the
log's end (``log_end``) when the interval opens, and reads what was appended since
(``decode_since``) when it closes: only whole lines (the cut stops at the last line break, so a line
being written is read next time, whole), split, made plain and masked as every log reader does
(``backends.logs.splitter``), parsed once (``backends.logs.parse``). It keeps the lead rank's lines and
leaves out each burst's idle closing line (``#token: 0``), as the plots and the guard do. The
console does not come here: its session's one tail hands it the same lines as they come.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from backends.logs.splitter import LineSplitter
from backends.logs.events import DecodeBatch
from backends.logs.parse import parse_line

CHUNK = 1 << 16
MAX_READ = 64 << 20  # at most this much of one stretch is read (its newest part)


def log_end(path: str | Path | None) -> int | None:
    """The log's size now: where the next stretch starts; None without a readable file."""
    if not path:
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def decode_since(path: str | Path | None, offset: int | None) -> tuple[list[DecodeBatch], int | None]:
    """The lead rank's non-idle decode lines written after ``offset``, and the offset after the last
    whole line read (the next stretch's start). A log that shrank (rotated, truncated) is read from its
    start. ``([], offset)`` when there is no file or nothing new."""
    if not path or offset is None:
        return [], offset
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            start = 0 if size < offset else offset
            start = max(start, size - MAX_READ)
            fh.seek(start)
            data = fh.read(size - start)
    except OSError:
        return [], offset
    cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
    if cut <= 0:
        return [], start
    return decode_lines(_split(data[:cut])), start + cut


def _split(data: bytes) -> Iterable[str]:
    splitter = LineSplitter()
    for i in range(0, len(data), CHUNK):
        yield from splitter.feed(data[i:i + CHUNK])
    yield from splitter.flush()


def decode_lines(lines: Iterable[str]) -> list[DecodeBatch]:
    """The lead rank's non-idle ``Decode batch`` events among ``lines``."""
    out = []
    for line in lines:
        event = parse_line(line)
        if isinstance(event, DecodeBatch) and event.is_lead and not event.idle:
            out.append(event)
    return out


def weighted_accept(events: Iterable[DecodeBatch]) -> tuple[float | None, int, int]:
    """``accept len`` over ``events`` weighted by ``#running-req`` (the verify calls each line stands
    for: backends/logs/acceptance.py), with the lines and the weight it took; None without a line
    that has both."""
    weighted = 0.0
    lines = weight = 0
    for e in events:
        if e.accept_len is not None and e.running_req > 0:
            weighted += e.accept_len * e.running_req
            weight += e.running_req
            lines += 1
    return (weighted / weight if weight else None), lines, weight

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

from backends.core.datafile import open_regular
from backends.core.errors import DdtuneError
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
    found = _read_from(path, offset, MAX_READ)
    if found is None:
        return [], offset
    data, start = found
    cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
    if cut <= 0:
        return [], start
    return decode_lines(_split(data[:cut])), start + cut


def recent_log_lines(path: str | Path | None, max_bytes: int) -> list[str]:
    """The log's last ``max_bytes`` as lines (split and made plain as every reader does); [] without
    a readable log."""
    found = _read_from(path, None, max_bytes) if path else None
    return list(_split(found[0])) if found is not None else []


def _read_from(path: str | Path, offset: int | None, limit: int) -> tuple[bytes, int] | None:
    """(the bytes from ``offset`` to the end, where they start), at most the last ``limit`` of them;
    ``offset`` None or past the end (a log that shrank): from the start. None without a readable
    regular file (backends.core.datafile: never a FIFO or a device planted as the log)."""
    try:
        fd, _ = open_regular(path)
    except DdtuneError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = 0 if offset is None or size < offset else offset
            start = max(start, size - limit)
            fh.seek(start)
            return fh.read(size - start), start
    except OSError:
        return None


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

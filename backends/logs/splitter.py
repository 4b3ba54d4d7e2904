"""Split a server's output stream into log lines: on ``\\n`` and ``\\r`` (tqdm redraws), each made
plain (``backends.core.plaintext``: no ANSI colours, no other terminal control) and bounded, so a 10 MB
line without a newline costs at most ``max_len`` characters of memory. Every log reader (the
session's tail, the journal, ``inspect``) splits here, so this is also where API keys leave the
lines (``backends.core.apikey.mask``: SGLang prints its whole ``server_args`` with the key at startup)."""

from __future__ import annotations

import codecs
import re

from backends.core.apikey import mask
from backends.core.plaintext import plain

MAX_LINE = 64 * 1024
TRUNCATED_MARK = " [...]"

_BREAKS = re.compile(r"[\r\n]")


def strip_ansi(text: str) -> str:
    """``text`` as a log line shows it: escapes and every other terminal control removed."""
    return plain(text)


class LineSplitter:
    """Incremental splitter. ``feed(chunk)`` takes str or bytes (UTF-8, bad bytes replaced) and
    returns the lines completed so far; ``flush()`` returns the last unterminated line.
    Empty lines are dropped. A line longer than ``max_len`` is cut there and marked with
    ``TRUNCATED_MARK``; the rest of it, up to the next break, is skipped."""

    def __init__(self, max_len: int = MAX_LINE) -> None:
        if max_len < 1:
            raise ValueError("max_len must be positive")
        self.max_len = max_len
        self._parts: list[str] = []
        self._size = 0
        self._skipping = False  # the current line was already cut: drop text until a break
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, chunk: str | bytes) -> list[str]:
        if self._skipping and isinstance(chunk, (bytes, bytearray)) and b"\n" not in chunk and b"\r" not in chunk:
            self._decoder.reset()  # more of a line already cut: dropped undecoded (a 4 GB line costs no decode)
            return []
        text = self._decoder.decode(chunk) if isinstance(chunk, (bytes, bytearray)) else chunk
        out: list[str] = []
        pos = 0
        for m in _BREAKS.finditer(text):
            self._add(text[pos:m.start()])
            self._emit(out)
            pos = m.end()
        self._add(text[pos:])
        return out

    def flush(self) -> list[str]:
        out: list[str] = []
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._add(tail)
        self._emit(out)
        return out

    def _add(self, piece: str) -> None:
        if not piece or self._skipping:
            return
        room = self.max_len - self._size
        if len(piece) > room:
            piece = piece[:room]
            self._skipping = True
        self._parts.append(piece)
        self._size += len(piece)

    def _emit(self, out: list[str]) -> None:
        line = "".join(self._parts)
        if self._skipping:
            line += TRUNCATED_MARK
        self._parts.clear()
        self._size = 0
        self._skipping = False
        line = mask(strip_ansi(line))
        if line.strip():
            out.append(line)


def split_lines(chunk: str | bytes, max_len: int = MAX_LINE) -> list[str]:
    """All lines of one complete chunk (``LineSplitter`` fed once, then flushed)."""
    splitter = LineSplitter(max_len)
    return splitter.feed(chunk) + splitter.flush()

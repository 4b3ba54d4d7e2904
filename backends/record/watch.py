"""Know when another process changes the state dir, without re-reading it on a timer.

``DirWatch(dir, names)`` yields the set of watched file names that changed. On Linux it asks the
kernel (inotify, through libc) and costs nothing while nothing happens; elsewhere, or where inotify
is unavailable (limits, seccomp), it compares the files' stat every ``fallback_s`` seconds.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import os
import struct
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

_IN_MODIFY, _IN_CLOSE_WRITE, _IN_MOVED_FROM, _IN_MOVED_TO = 0x2, 0x8, 0x40, 0x80
_IN_CREATE, _IN_DELETE = 0x100, 0x200
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_HEADER = struct.Struct("iIII")
SETTLE_S = 0.05   # changes this close together arrive as one


@functools.cache
def _libc():
    """libc with inotify, or None; cached: find_library runs ``ldconfig -p`` in a subprocess, and a
    watch opens for every log a session follows."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.inotify_init1  # noqa: B018  (present on Linux only)
        return libc
    except (OSError, AttributeError):
        return None


def parse_events(buf: bytes) -> list[tuple[int, str]]:
    """(mask, name) for each ``struct inotify_event`` in a read buffer."""
    out, offset = [], 0
    while offset + _HEADER.size <= len(buf):
        _wd, mask, _cookie, length = _HEADER.unpack_from(buf, offset)
        start = offset + _HEADER.size
        name = buf[start:start + length].split(b"\0", 1)[0].decode(errors="replace")
        out.append((mask, name))
        offset = start + length
    return out


class DirWatch:
    """``async for names in DirWatch(path, {"server.json"}).changes(): ...``, or, for one waiter
    with a timeout, ``with DirWatch(...) as w: await w.wait(timeout)``."""

    def __init__(self, path: Path, names: Iterable[str], fallback_s: float = 1.0) -> None:
        self.path = Path(path)
        self.names = frozenset(names)
        self.fallback_s = fallback_s
        self.kind = "inotify"
        self._fd: int | None = None
        self._ready: asyncio.Event | None = None
        self._before: dict[str, tuple[int, int, int] | None] = {}

    def __enter__(self) -> DirWatch:
        self._fd = self._open()
        if self._fd is None:
            self.kind = "stat"
            self._before = self._stat()
        else:
            self._ready = asyncio.Event()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    async def wait(self, timeout: float | None = None) -> set[str]:
        """The watched names that changed since the last call; empty after ``timeout`` seconds."""
        if self._fd is None or self._ready is None:
            await asyncio.sleep(min(self.fallback_s, timeout) if timeout is not None else self.fallback_s)
            now = self._stat()
            moved = {name for name in self.names if now[name] != self._before.get(name)}
            self._before = now
            return moved
        # The reader is registered only while waiting: epoll is level-triggered, and an fd left
        # readable during the settle below would wake the loop on every turn (a busy spin under a
        # busy log: it cost the console a fifth of a core).
        loop = asyncio.get_running_loop()
        loop.add_reader(self._fd, self._ready.set)
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            return set()
        finally:
            loop.remove_reader(self._fd)
            self._ready.clear()
        await asyncio.sleep(SETTLE_S)  # what else changes meanwhile comes in the same read
        changed: set[str] = set()
        while True:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            changed.update(name for _mask, name in parse_events(buf) if name in self.names)
        return changed

    async def changes(self) -> AsyncIterator[set[str]]:
        with self:
            while True:
                changed = await self.wait()
                if changed:
                    yield changed

    def _open(self) -> int | None:
        libc = _libc()
        if libc is None:
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, os.fsencode(self.path), _MASK) < 0:
            os.close(fd)
            return None
        return fd

    def _stat(self) -> dict[str, tuple[int, int, int] | None]:
        out: dict[str, tuple[int, int, int] | None] = {}
        for name in self.names:
            try:
                st = os.stat(self.path / name)
                out[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                out[name] = None
        return out

"""One lifecycle action at a time per state dir: an exclusive ``fcntl.flock`` on ``lifecycle.lock``.

Two ``restart``s, or ``up`` and the console's Apply, would otherwise both stop the old server and
both launch: one dies on a bind error while ``server.json`` names it and the other one serves. The
holder writes who it is into the lock file (opened without following a link, and only if it is a
plain file of this user's: backends.core.statefs), so the one that waits can say whom it waits for. The
kernel drops the lock when the holder dies, however it dies.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import time
from collections.abc import Callable
from types import TracebackType

from backends.core.errors import DdtuneError, ServerError
from backends.core.paths import server_dir
from backends.core.statefs import open_state

LOCK_FILE = "lifecycle.lock"
POLL_S = 0.2


class LifecycleBusy(ServerError):
    """Another ddtune holds the lifecycle lock and the caller asked not to wait."""


class LifecycleLock:
    """``async with LifecycleLock("restart", server_pid, on_wait=print, wait=True):``"""

    def __init__(self, action: str, server_pid: int | None = None,
                 on_wait: Callable[[str], None] | None = None, wait: bool = True) -> None:
        self.action = action
        self.server_pid = server_pid
        self.on_wait = on_wait or (lambda text: None)
        self.wait = wait
        self._fd: int | None = None

    async def __aenter__(self) -> LifecycleLock:
        # never O_TRUNC, never through a symlink: only a plain single-link file of ours (statefs)
        # is ever truncated, below, once it is locked
        fd = open_state(server_dir() / LOCK_FILE, os.O_RDWR | os.O_CREAT)
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
                holder = describe_holder(fd)
                if not self.wait:
                    raise LifecycleBusy(f"{holder}; not waiting (--no-wait)",
                                        hint="wait for it to finish, or run again without --no-wait")
                if not told:
                    self.on_wait(f"{holder}, waiting")
                    told = True
                await asyncio.sleep(POLL_S)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "action": self.action, "server_pid": self.server_pid,
                                      "since": time.time()}).encode(), 0)
        except OSError:
            pass  # a full disk: the lock holds all the same, a waiter just cannot say whom it waits for
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def describe_holder(fd: int) -> str:
    """"another ddtune (pid H) is restarting pid N", from what the holder wrote."""
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        doc = {}
    return describe_holder_doc(doc if isinstance(doc, dict) else {})


def describe_holder_doc(doc: dict) -> str:
    who = f"another ddtune (pid {doc['pid']})" if isinstance(doc.get("pid"), int) else "another ddtune"
    action = doc.get("action")
    if not isinstance(action, str):
        action = "managing the server"
    verb = {"up": "starting", "restart": "restarting", "down": "stopping"}.get(action, action)
    target = f"pid {doc['server_pid']}" if isinstance(doc.get("server_pid"), int) else "the server"
    return f"{who} is {verb} {target}"


def holder() -> dict:
    """What the current holder of the lifecycle lock wrote ({} when nobody holds it)."""
    try:
        fd = open_state(server_dir() / LOCK_FILE, os.O_RDONLY)
    except (OSError, DdtuneError):
        return {}
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        doc = {}
    finally:
        os.close(fd)
    return doc if isinstance(doc, dict) else {}

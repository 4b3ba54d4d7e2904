"""Who writes a run. Every process that writes a run directory (a new run, or each ``--resume``) is
one *attempt*, listed in run.json's ``attempts`` with its id, pid, process start time and host.

The attempt id tags every response and every kept result, so a cell that a killed attempt left half
done never mixes with the attempt that redid it. The writer's identity lets a later command see that
a run still marked ``running`` has lost its writer (SIGKILL, a closed SSH session, a power cut): the
pid alone is not enough, because the kernel reuses pids, so the process start time must match too.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psutil

# psutil derives the start time from boot time plus clock ticks: the same process reads the same
# value to well within this, while a reused pid belongs to a process started later.
_SAME_START_S = 0.5


def _self_stamp() -> dict:
    return {"pid": os.getpid(), "create_time": psutil.Process().create_time(), "host": socket.gethostname()}


def begin_attempt(doc: dict) -> int:
    """Append this process as the next attempt to a run document, mark it running; returns the id (1, 2, ...)."""
    attempts = [a for a in doc.get("attempts") or [] if isinstance(a, dict)]
    attempt = {"id": len(attempts) + 1, **_self_stamp(), "started_at": time.time()}
    doc["attempts"] = attempts + [attempt]
    doc["status"] = "running"
    return attempt["id"]


def _last_writer(doc: dict) -> dict | None:
    attempts = doc.get("attempts")
    if not isinstance(attempts, list) or not attempts or not isinstance(attempts[-1], dict):
        return None
    return attempts[-1]


def writer_alive(doc: dict) -> bool | None:
    """Whether the process of the run's last attempt still exists: None when that cannot be known
    (a run from an older ddtune without ``attempts``, one written on another host, no permission)."""
    last = _last_writer(doc)
    if last is None or last.get("host") != socket.gethostname():
        return None
    pid, created = last.get("pid"), last.get("create_time")
    if not isinstance(pid, int) or not isinstance(created, (int, float)):
        return None
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(proc.create_time() - created) < _SAME_START_S
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return None


def written_by_other(doc: dict) -> int | None:
    """The pid of another live process still writing this run, else None."""
    last = _last_writer(doc)
    if doc.get("status") != "running" or last is None or writer_alive(doc) is not True:
        return None
    return None if last.get("pid") == os.getpid() else int(last["pid"])


def status_of(doc: dict) -> str:
    """The run's status as it stands: ``running`` whose writer is gone reads ``interrupted``."""
    status = doc.get("status")
    if status == "running" and writer_alive(doc) is False:
        return "interrupted"
    return status if isinstance(status, str) else "?"


def abandoned_note(doc: dict) -> str:
    last = _last_writer(doc) or {}
    return f"the process writing it (pid {last.get('pid')}) ended without recording an end (killed?)"


@contextmanager
def recording_end(on_end: Callable[[str], None]) -> Iterator[None]:
    """Around a long run (a sweep, a search): ``on_end`` learns how it ended, ``done``, ``failed`` (an
    error, re-raised) or ``interrupted`` (Ctrl-C or a cancel: resumable), and records it."""
    status = "interrupted"
    try:
        yield
        status = "done"
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        on_end(status)

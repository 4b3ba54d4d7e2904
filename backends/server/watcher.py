"""What other processes do to this state dir's server: another ddtune's ``restart`` or ``down`` beside
the console, a sweep's restart, a headless ``up``.

The kernel says when ``server.json`` or the lifecycle lock changed (backends.record.watch), and
only another process's change comes out of here: a lock whose holder's pid is ours is ours, and the
server.json this session's ``RecordFile`` last left there (or last read) is known by its identity,
unread. No counter of commands in flight, and no re-reading of its own writes.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from backends.core.paths import server_dir
from backends.record.lock import LOCK_FILE, holder
from backends.record.state import ServerState
from backends.record.watch import DirWatch
from backends.server.record import STATE_FILE, RecordFile


@dataclass(frozen=True)
class LockTaken:
    """Another process took the lifecycle lock (what it wrote there: pid, action, server_pid)."""

    holder: dict


@dataclass(frozen=True)
class RecordChanged:
    """Another process changed the record: the server it names now (None: none, or set aside)."""

    state: ServerState | None


async def foreign_changes(record: RecordFile, note: Callable[[str], None]) -> AsyncIterator[LockTaken | RecordChanged]:
    """Each change another process makes, as it happens, until the reader stops iterating."""
    async for names in DirWatch(server_dir(), {STATE_FILE, LOCK_FILE}).changes():
        if LOCK_FILE in names:
            doc = holder()
            if doc and doc.get("pid") != os.getpid():
                yield LockTaken(doc)
        if STATE_FILE in names:
            changed, state = record.changed(note)
            if changed:
                yield RecordChanged(state)

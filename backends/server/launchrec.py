"""A launch is recorded before the process exists, so no kill of ddtune can lose the server.

The order of a launch (ServerSession's launch with ProcessBackend.start):

1. ``launch.json`` with a fresh launch token, the argv and the log path, no pid (the intent). If it
   cannot be written (full disk, read-only dir) nothing is launched: the error says why.
2. spawn, with the token in the server's environment (``DDTUNE_LAUNCH_TOKEN``);
3. ``launch.json`` again with the pid and its create time, then ``server.json``.

A ddtune killed between 1 and 3 (``kill -9`` of ``ddtune restart``, a closed SSH session) leaves
the intent. The next ``up``/``restart``/``down`` of this state dir, under the lifecycle lock (so no
live ddtune is mid-launch), finds what that launch left by its token in ``/proc/*/environ``,
records it in ``server.json`` and goes on with it as with any recorded server: re-attach, restart
or stop. ``up`` so never starts a second server beside one it can prove is its own.

``DDTUNE_CRASH_AT=after-intent|after-spawn|after-pid`` makes ddtune SIGKILL itself at that step of
a launch (backends.launch.ownership.crash_point): how the tests reproduce the kill at a chosen
instant. It never reaches the server.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from backends.core.errors import DdtuneError
from backends.drivers.base import Backend
from backends.knobs.plan import LaunchPlan
from backends.launch.ownership import crash_point, token_holders
from backends.record.state import ServerState
from backends.server.record import RecordFile, clear_launch, read_launch, save_launch


def _leader(holders: dict[int, float]) -> int | None:
    """The spawned process among the token's holders: it leads its own session (start_new_session)."""
    for pid in sorted(holders, key=holders.__getitem__):
        try:
            if os.getsid(pid) == pid and os.getpgid(pid) == pid:
                return pid
        except (ProcessLookupError, PermissionError):
            continue
    return None


def _dead_leader(doc: dict, holders: dict[int, float]) -> int | None:
    """The pid of a launch's leader that died, leaving ``holders``: recorded, else their group."""
    if isinstance(doc.get("pid"), int) and not isinstance(doc["pid"], bool) and doc["pid"] > 1:
        return doc["pid"]
    for pid in holders:
        try:
            group = os.getpgid(pid)
        except ProcessLookupError:
            continue
        return group if group > 1 else None
    return None


def adopt_lost_launch(record: RecordFile, note: Callable[[str], None]) -> ServerState | None:
    """Under the lifecycle lock: record the server an interrupted launch left unrecorded, if any.
    Returns the state now in server.json (the adopted one, or what was there)."""
    recorded = record.load(note)
    doc = read_launch()
    token = doc.get("token") if doc is not None else None
    if doc is None or not isinstance(token, str) or not token:
        return recorded
    if recorded is not None and recorded.token == token:
        return recorded  # launch.json and server.json agree: nothing was lost
    holders = token_holders(token)
    if not holders:
        if recorded is None:
            clear_launch()  # an intent whose process never started, or is gone with all it forked
        return recorded
    try:
        base = ServerState.from_json(doc.get("record"))
    except (ValueError, TypeError):
        note(f"found pids {sorted(holders)} of an interrupted launch, but its record is unreadable; "
             "leaving them alone: stop them yourself (kill PID)")
        return recorded
    leader = _leader(holders)
    pid = leader if leader is not None else _dead_leader(doc, holders)
    if pid is None:
        return recorded
    started = holders[leader] if leader is not None else min(holders.values())
    state = base.with_(pid=pid, pgid=pid, create_time=started, argv=tuple(doc["argv"]), token=token,
                       phase="starting" if leader is not None else "failed",
                       reason=None if leader is not None else "its leader died before ddtune recorded it")
    record.save(state)
    alive = f"pid {pid}" if leader is not None else f"what pid {pid} left running (pids {sorted(holders)})"
    note(f"found {alive} by its launch token: an earlier ddtune launched it and was stopped before it "
         "recorded it; recorded it now")
    return state


async def launch_recorded(backend: Backend, plan: LaunchPlan, record: RecordFile) -> ServerState:
    """Launch through ``backend`` in the order above. When the record of the spawned server cannot be
    written (the disk filled meanwhile), that server is stopped again (ddtune could never find it
    otherwise, nor stop it) and the error raised: nothing runs unrecorded."""
    state = await backend.start(plan, record=save_launch)
    try:
        if state.token:
            save_launch(state)
        crash_point("after-pid")
        record.save(state)
    except DdtuneError:
        if backend.CAN_STOP and state.pid:
            await backend.stop(state)
        raise
    return state

"""A launch is recorded before the process exists, so no kill of ddtune can lose the server.

The order of a launch (ServerSession's launch with ProcessDriver.start):

0. before a restart stops the running server: a record of the launch's size is written and removed
   (``prove_recordable``): a state dir that cannot take it refuses the restart, old server untouched;
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
import time
from collections.abc import Callable

from backends.core.errors import DdtuneError
from backends.core.paths import logs_dir
from backends.core.phase import Phase
from backends.core.statefs import StateWriteError
from backends.drivers.base import Driver
from backends.drivers.registry import alive
from backends.knobs.plan import LaunchPlan
from backends.launch.ownership import crash_point, new_token, token_holders
from backends.launch.process import open_log
from backends.record.state import ServerState
from backends.server.record import RecordFile, clear_launch, prove_room, read_launch, save_launch


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
                       phase=Phase.STARTING if leader is not None else Phase.FAILED,
                       reason=None if leader is not None else "its leader died before ddtune recorded it")
    record.save(state)
    alive = f"pid {pid}" if leader is not None else f"what pid {pid} left running (pids {sorted(holders)})"
    note(f"found {alive} by its launch token: an earlier ddtune launched it and was stopped before it "
         "recorded it; recorded it now")
    return state


def prove_recordable(backend: Driver, plan: LaunchPlan, old: ServerState | None) -> None:
    """Before a restart stops anything: the state dir takes this launch's records now (writable, with
    room), proved by writing and removing a file of their size (the longest pid and log name) through
    the records' own writer. Else StateWriteError (or UntrustedState) and nothing is stopped: a full or
    read-only state dir never costs the running server it could not replace (issue 28, item 7)."""
    pid, now = 4194304, time.time()  # pid_max's ceiling: the widest pid a record can hold
    log = logs_dir() / f"server-{time.strftime('%Y%m%d-%H%M%S')}-{pid}-99.log"
    try:
        # the launch's log file exists while its records are written: both are proved at once (a dir
        # with room for one more file passed a proof of the record alone, then lost the old server)
        fd = open_log(log)
        try:
            prove_room(backend.launch_state(plan, pid=pid, pgid=pid, create_time=now, token=new_token(),
                                            log_path=str(log)))
        finally:
            os.close(fd)
            log.unlink(missing_ok=True)
    except StateWriteError as exc:
        if old is None or old.pid is None or not alive(old):
            raise
        raise StateWriteError(f"{exc.message}: no new launch could be recorded, so pid {old.pid} was not stopped "
                              "and keeps serving", exc.hint, exit_code=exc.exit_code) from None


async def launch_recorded(backend: Driver, plan: LaunchPlan, record: RecordFile) -> ServerState:
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

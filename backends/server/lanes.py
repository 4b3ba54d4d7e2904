"""The servers a parallel sweep's lanes left recorded (one server.json per lane folder,
backends.record.lanes): read here, by the family that owns server records, and stopped here.

``lane_servers()`` lists them with whether each is still the process ddtune started; ``down`` and
the next sweep's planning stop them through a session of their own (backends.server.lanecontrol),
and the restart of any server refuses a port a lane server holds, naming it (``lane_holding``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from backends.core.paths import use_server_dir
from backends.drivers.registry import alive
from backends.record.lanes import lane_doc, lane_folders
from backends.record.state import ServerState
from backends.server.record import load_state


@dataclass(frozen=True)
class LaneServer:
    """A server recorded in a lane folder; ``alive``: its pid is still the process ddtune started."""

    index: int
    folder: Path
    state: ServerState
    gpus: tuple[str, ...]
    sweep: str | None
    alive: bool

    def describe(self) -> str:
        gpus = f" on GPU {','.join(self.gpus)}" if self.gpus else ""
        return f"lane {self.index} server pid {self.state.pid}{gpus}, port {self.state.port}"


def lane_servers(note: Callable[[str], None] | None = None) -> list[LaneServer]:
    """Every server recorded in a lane folder, alive or not (a dead one's record is for ``down``)."""
    found = []
    for index, folder in lane_folders():
        with use_server_dir(folder):
            state = load_state(note)
        if state is None:
            continue
        doc = lane_doc(folder)
        gpus = tuple(str(g) for g in doc.get("gpus") or ()) if isinstance(doc.get("gpus"), list) else ()
        sweep = doc.get("sweep") if isinstance(doc.get("sweep"), str) else None
        found.append(LaneServer(index, folder, state, gpus, sweep, alive(state)))
    return found


def live_lane_pids() -> set[int]:
    """Every process of every live lane server's tree (the memory they hold is ours to free)."""
    from backends.machine.host import server_tree_pids

    pids: set[int] = set()
    for server in lane_servers():
        if server.alive and server.state.pid:
            pids |= server_tree_pids(server.state.pid, server.state.pgid)
    return pids


def lane_holding(pid: int | None) -> LaneServer | None:
    """The live lane server whose process tree holds ``pid`` (a port, a GPU), if any."""
    from backends.machine.host import server_tree_pids

    if pid is None:
        return None
    for server in lane_servers():
        if server.alive and server.state.pid and pid in server_tree_pids(server.state.pid, server.state.pgid):
            return server
    return None

"""A parallel sweep's lanes on disk: one folder per lane under the state dir, each holding its own
server's record, so ``down`` and the next start find every server a sweep left.

    state_dir()/lanes/<n>/lane.json       the lane: its GPUs (index, UUID, model, clocks), its port,
                                          the sweep that ran it, the ports it left (port_moves)
    state_dir()/lanes/<n>/server.json     its server, the same record as the main server's: pid,
                                          pgid, create time (launch.json, lifecycle.lock, logs/ too)

Everything that manages "the server" (backends.record.state, statelock, lifecycle, session) reads
``paths.server_dir()``; inside ``Lane.scope()`` that is the lane's folder. A lane's server is
thus restarted, verified, re-attached and stopped by exactly the code that manages the main one,
and nothing is signalled before its record is proved on the live system (pid + create time +
the group it leads, backends.launch.ownership).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from backends.knobs.config import ServerConfig
from backends.core.datafile import loads
from backends.core.errors import UsageError
from backends.machine.gpuset import GpuIdentity
from backends.core.paths import state_dir, use_server_dir
from backends.record.state import ServerState, load_state
from backends.core.statefs import trusted_dir

LANES = "lanes"
LANE_FILE = "lane.json"
PORT_SEARCH = 200   # how far past base + i a lane looks for a free port


@dataclass(frozen=True)
class Lane:
    """One server of a parallel sweep: its GPU set (CUDA_VISIBLE_DEVICES) and its port."""

    index: int
    gpus: tuple[str, ...]
    port: int
    devices: tuple[GpuIdentity, ...] = ()

    @property
    def folder(self) -> Path:
        return lane_folder(self.index)

    @property
    def visible_devices(self) -> str:
        return ",".join(self.gpus)

    @property
    def label(self) -> str:
        return f"lane {self.index} (GPU {self.visible_devices})"

    def scope(self) -> AbstractContextManager[Path]:
        """Within it, "the server" is this lane's (its server.json, lock and logs)."""
        return use_server_dir(self.folder)

    def config(self, base: ServerConfig) -> ServerConfig:
        """The base config on this lane's port and GPUs. CUDA numbers GPUs fastest first unless told
        otherwise; PCI_BUS_ID makes its indices the ones NVML and nvidia-smi show."""
        env = {**base.env, "CUDA_VISIBLE_DEVICES": self.visible_devices, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        return replace(base, port=self.port, env=env)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "gpus": list(self.gpus), "port": self.port,
                "devices": [d.to_json() for d in self.devices]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lane:
        return cls(int(data["index"]), tuple(str(g) for g in data["gpus"]), int(data["port"]),
                   tuple(GpuIdentity.from_json(d) for d in data.get("devices") or () if isinstance(d, dict)))


def lanes_root() -> Path:
    return state_dir() / LANES


def lane_folder(index: int) -> Path:
    return lanes_root() / str(index)


def save_lane(lane: Lane, sweep: str | None, **extra: Any) -> None:
    """Write lane.json (0600, atomically): which GPUs and port the lane's server runs on, and for whom."""
    folder = lane.folder
    trusted_dir(folder.parent)
    trusted_dir(folder)  # an existing lane folder is a real dir of ours (backends.core.statefs)
    doc = {**lane.to_json(), "sweep": sweep, "sweep_pid": os.getpid(), "written_at": time.time(), **extra}
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".lane.", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, folder / LANE_FILE)


def _lane_doc(folder: Path) -> dict[str, Any]:
    try:
        doc = loads((folder / LANE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def record_move(lane: Lane, old_port: int, why: str) -> None:
    """lane.json names the lane's new port (its sweep kept) and, in ``port_moves``, each port it left
    and why: a lane's port is taken between planning and its server's bind."""
    doc = _lane_doc(lane.folder)
    found = doc.get("port_moves")
    moves: list[Any] = list(found) if isinstance(found, list) else []
    sweep = doc.get("sweep") if isinstance(doc.get("sweep"), str) else None
    moves.append({"from": old_port, "to": lane.port, "why": why, "at": time.time()})
    save_lane(lane, sweep, port_moves=moves)


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


def _folders() -> Iterator[tuple[int, Path]]:
    root = lanes_root()
    if not root.is_dir():
        return
    for path in sorted(root.iterdir(), key=lambda p: (len(p.name), p.name)):
        if path.is_dir() and path.name.isdigit():
            yield int(path.name), path


def lane_servers(note: Callable[[str], None] | None = None) -> list[LaneServer]:
    """Every server recorded in a lane folder, alive or not (a dead one's record is for ``down``)."""
    found = []
    for index, folder in _folders():
        with use_server_dir(folder):
            state = load_state(note)
        if state is None:
            continue
        doc = _lane_doc(folder)
        gpus = tuple(str(g) for g in doc.get("gpus") or ()) if isinstance(doc.get("gpus"), list) else ()
        sweep = doc.get("sweep") if isinstance(doc.get("sweep"), str) else None
        found.append(LaneServer(index, folder, state, gpus, sweep, state.is_alive()))
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


async def stop_lane_servers(config: ServerConfig, indexes: Collection[int] | None = None, *,
                            wait_for_lock: bool = True,
                            note: Callable[[str], None] | None = None) -> list[tuple[bool, str]]:
    """Stop the recorded server of each lane (all, or ``indexes``), each under its own lock and
    ownership proof; (stopped, sentence) per lane that had a record. A record that proves nothing
    is set aside and reported (ServerManager.down), never signalled: (False, why)."""
    from backends.core.errors import DdtuneError
    from backends.server.lifecycle import ServerManager

    said: list[tuple[bool, str]] = []
    for server in lane_servers(note):
        if indexes is not None and server.index not in indexes:
            continue
        with use_server_dir(server.folder):
            manager = ServerManager(config, on_note=note, wait_for_lock=wait_for_lock)
            try:
                stopped = await manager.down()
            except DdtuneError as exc:
                said.append((False, f"lane {server.index}: {exc.message}"))
                continue
        if stopped is not None:
            said.append((True, f"lane {server.index}: {stopped.reason}"))
    return said


def assign_ports(base: int, count: int, own: dict[int, set[int]],
                 owner_of: Callable[[int], int | None | bool]) -> list[int]:
    """Lane i's port: base + i, or the next one after it that is free, skipping ports an earlier
    lane took. ``own[i]``: pids of lane i's live recorded server (it may keep its port: the restart
    stops it first). ``owner_of(port)``: the listening pid, True when the owner cannot be named,
    None when free."""
    ports: list[int] = []
    for i in range(count):
        port = max(base + i, ports[-1] + 1 if ports else base)
        for _ in range(PORT_SEARCH):
            owner = owner_of(port)
            if port <= 65535 and (owner is None or (owner is not True and owner in own.get(i, set()))):
                break
            port += 1
        else:
            raise UsageError(f"lane {i}: no free port in {base + i}..{port}",
                             hint="set [server] port in the config to a base with free ports after it")
        ports.append(port)
    return ports


def port_owner_pid(port: int) -> int | None | bool:
    """For assign_ports: the pid listening on ``port``, True when someone listens but is unnamed."""
    from backends.launch.process import port_owner

    owner = port_owner(port)
    if owner is None:
        return None
    return owner.pid if owner.pid is not None else True

"""A parallel sweep's lanes on disk: one folder per lane under the state dir, each holding its own
server's record, so ``down`` and the next start find every server a sweep left.

    state_dir()/lanes/<n>/lane.json       the lane: its GPUs (index, UUID, model, clocks), its port,
                                          the sweep that ran it, the ports it left (port_moves)
    state_dir()/lanes/<n>/server.json     its server, the same record as the main server's: pid,
                                          pgid, create time (launch.json, lifecycle.lock, logs/ too)

Everything that manages "the server" (its record, lock and session: backends.server) reads
``paths.server_dir()``; inside ``Lane.scope()`` that is the lane's folder. A lane's server is
thus restarted, verified, re-attached and stopped by exactly the code that manages the main one,
and nothing is signalled before its record is proved on the live system (pid + create time +
the group it leads, backends.launch.ownership). The servers recorded in lane folders are read by
the server family (backends.server.lanes), the one reader of server records.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from backends.knobs.config import ServerConfig
from backends.core.datafile import loads
from backends.core.errors import DdtuneError, UsageError
from backends.machine.gpuset import GpuIdentity
from backends.core.paths import state_dir, use_server_dir
from backends.core.statefs import read_state_file, trusted_dir, write_atomic

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
    shares_with: tuple[int, ...] = ()   # lanes whose servers run on one of its GPUs too (--share-gpu)

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
                "devices": [d.to_json() for d in self.devices], "shares_with": list(self.shares_with)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lane:
        return cls(int(data["index"]), tuple(str(g) for g in data["gpus"]), int(data["port"]),
                   tuple(GpuIdentity.from_json(d) for d in data.get("devices") or () if isinstance(d, dict)),
                   tuple(int(i) for i in data.get("shares_with") or ()))


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
    write_atomic(folder / LANE_FILE, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def lane_doc(folder: Path) -> dict[str, Any]:
    try:
        raw = read_state_file(folder / LANE_FILE)  # a plain file of ours, bounded (backends.core.statefs)
        doc = loads(raw) if raw is not None else None
    except (OSError, ValueError, DdtuneError):
        return {}
    return doc if isinstance(doc, dict) else {}


def record_move(lane: Lane, old_port: int, why: str) -> None:
    """lane.json names the lane's new port (its sweep kept) and, in ``port_moves``, each port it left
    and why: a lane's port is taken between planning and its server's bind."""
    doc = lane_doc(lane.folder)
    found = doc.get("port_moves")
    moves: list[Any] = list(found) if isinstance(found, list) else []
    sweep = doc.get("sweep") if isinstance(doc.get("sweep"), str) else None
    moves.append({"from": old_port, "to": lane.port, "why": why, "at": time.time()})
    save_lane(lane, sweep, port_moves=moves)


def lane_folders() -> Iterator[tuple[int, Path]]:
    root = lanes_root()
    if not root.is_dir():
        return
    for path in sorted(root.iterdir(), key=lambda p: (len(p.name), p.name)):
        if path.is_dir() and path.name.isdigit():
            yield int(path.name), path


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

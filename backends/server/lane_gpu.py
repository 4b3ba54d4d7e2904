"""Which GPU memory belongs to which lane server: the one attribution ``ddtune gpu`` and the
console's GPU panel both show (a parallel sweep's or search's servers, backends/server/lanes.py).

    trees = lane_trees()                     # reads the lane folders and walks /proc: a thread's work
    for share in lane_shares(snapshot, trees):
        print(share.label, share.pid, share.used_bytes, share.device_indices)

NVML lists processes by pid; a lane server's memory is what NVML lists for the pids of its process
tree (the server and the scheduler processes it forks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from backends.machine.gpu import GpuSnapshot


@dataclass(frozen=True)
class LaneTree:
    label: str                  # "lane 0 GPU 0"
    pid: int                    # the lane server's leader
    pids: tuple[int, ...]       # its process tree


@dataclass(frozen=True)
class LaneShare:
    label: str
    pid: int
    tree_pids: tuple[int, ...]
    used_bytes: int
    device_indices: tuple[int, ...]   # GPUs NVML lists the tree on
    pids: tuple[int, ...]             # the tree's pids NVML lists

    def on_device(self, snapshot: GpuSnapshot, index: int) -> int:
        """Bytes this lane's tree holds on GPU ``index``."""
        tree = set(self.tree_pids)
        return sum(p.used_bytes or 0 for p in snapshot.processes
                   if p.visible and p.pid in tree and p.device_index == index)

    def to_json(self) -> dict:
        return {"lane": self.label, "pid": self.pid, "tree_pids": list(self.tree_pids),
                "used_bytes": self.used_bytes, "device_indices": list(self.device_indices), "pids": list(self.pids)}


def lane_trees(note: Callable[[str], None] | None = None) -> tuple[LaneTree, ...]:
    """Each live lane server recorded under the state dir, with its process tree (blocking: lane
    folders and /proc). ``note`` hears of a corrupt record set aside (default: stderr)."""
    from backends.machine.host import server_tree_pids
    from backends.server.lanes import lane_servers

    out = []
    for server in lane_servers(note):
        if server.alive and server.state.pid:
            gpus = f" GPU {','.join(server.gpus)}" if server.gpus else ""
            out.append(LaneTree(f"lane {server.index}{gpus}", server.state.pid,
                                tuple(sorted(server_tree_pids(server.state.pid, server.state.pgid)))))
    return tuple(out)


def lane_shares(snapshot: GpuSnapshot, trees: tuple[LaneTree, ...] | list[LaneTree]) -> tuple[LaneShare, ...]:
    """Per lane server: the GPU memory NVML lists for its process tree, and on which GPUs."""
    out = []
    for tree in trees:
        members = set(tree.pids)
        mine = [p for p in snapshot.processes if p.pid in members and p.visible] if snapshot.available else []
        out.append(LaneShare(tree.label, tree.pid, tree.pids, sum(p.used_bytes or 0 for p in mine),
                             tuple(sorted({p.device_index for p in mine})), tuple(sorted({p.pid for p in mine}))))
    return tuple(out)

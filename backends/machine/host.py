"""Host telemetry (psutil): machine CPU and RAM, and the managed server's process tree with its CPU% and RSS.

The server's tree is every process that shares its process group or its session, plus every descendant of
its root: SGLang's schedulers and detokenizer are children, and ones reparented to PID 1 after the parent
died still carry the group and session ids, so they are still counted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class HostSnapshot:
    """One reading of the machine and of the server's tree. ``tree_*`` are 0/empty without a server."""

    timestamp: float
    cpu_percent: float           # whole machine, 0-100
    cpu_count: int
    ram_used: int                # bytes
    ram_total: int               # bytes
    tree_pids: tuple[int, ...] = ()
    tree_cpu_percent: float = 0.0   # sum over the tree, 100 = one core
    tree_rss: int = 0            # bytes


def _stat_ids(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgrp, session) from /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return int(fields[1]), int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _all_ids() -> dict[int, tuple[int, int, int]]:
    ids: dict[int, tuple[int, int, int]] = {}
    if os.path.isdir("/proc"):
        for name in os.listdir("/proc"):
            if name.isdigit():
                found = _stat_ids(int(name))
                if found is not None:
                    ids[int(name)] = found
        return ids
    for proc in psutil.process_iter():   # not Linux: slower, same answer
        try:
            ids[proc.pid] = (proc.ppid(), os.getpgid(proc.pid), os.getsid(proc.pid))
        except (psutil.Error, OSError):
            continue
    return ids


def server_tree_pids(pid: int, pgid: int | None = None) -> set[int]:
    """Every live process of the server rooted at ``pid``: its process group, its session and its
    descendants. ``pgid`` (from server.json) still finds the group after the root itself has died.
    Returns an empty set when nothing of the server is left."""
    ids = _all_ids()
    groups: set[int] = set()
    sessions: set[int] = set()
    if pid in ids:
        groups.add(ids[pid][1])
        sessions.add(ids[pid][2])
    if pgid is not None:
        groups.add(pgid)
        sessions.add(pgid)   # started with start_new_session: group leader == session leader
    # Never sweep in our own group or session (a server started from this very shell would drag us in).
    own = os.getpgrp(), os.getsid(0)
    members = {p for p, (_, grp, sid) in ids.items()
               if (grp in groups and grp not in own) or (sid in sessions and sid not in own)}
    if pid in ids:
        members.add(pid)
    children: dict[int, list[int]] = {}
    for p, (ppid, _, _) in ids.items():
        children.setdefault(ppid, []).append(p)
    stack = list(members)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in members:
                members.add(child)
                stack.append(child)
    return members


class HostSampler:
    """Reads host CPU/RAM and the CPU%/RSS of a set of pids. Keeps psutil.Process objects between calls
    so CPU% is measured over the interval since the previous sample (the first sample reads 0)."""

    def __init__(self) -> None:
        self._procs: dict[int, psutil.Process] = {}
        psutil.cpu_percent(interval=None)   # prime the machine-wide counter

    def sample(self, tree_pids: Collection[int] = ()) -> HostSnapshot:
        mem = psutil.virtual_memory()
        cpu = psutil.cpu_percent(interval=None)
        total_cpu = 0.0
        total_rss = 0
        alive: list[int] = []
        wanted = set(tree_pids)
        for pid in list(self._procs):
            if pid not in wanted:
                del self._procs[pid]
        for pid in sorted(wanted):
            proc = self._procs.get(pid)
            try:
                if proc is None:
                    proc = psutil.Process(pid)
                    self._procs[pid] = proc
                    proc.cpu_percent(interval=None)   # prime; reads 0 the first time
                    with proc.oneshot():
                        total_rss += proc.memory_info().rss
                else:
                    with proc.oneshot():
                        total_cpu += proc.cpu_percent(interval=None)
                        total_rss += proc.memory_info().rss
                alive.append(pid)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                self._procs.pop(pid, None)
            except psutil.AccessDenied:
                alive.append(pid)
        return HostSnapshot(
            timestamp=time.time(), cpu_percent=cpu, cpu_count=psutil.cpu_count() or 1,
            ram_used=mem.total - mem.available, ram_total=mem.total,
            tree_pids=tuple(alive), tree_cpu_percent=total_cpu, tree_rss=total_rss,
        )

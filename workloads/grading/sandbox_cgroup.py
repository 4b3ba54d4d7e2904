"""A cgroup per graded answer, where one can be had: limits for the whole answer, not per process.

Memory (shared memory and tmpfs pages included, as the kernel charges them to the cgroup) and the
number of processes are capped over everything the answer starts. Where this process may create
cgroups (root, or a delegated subtree):
- cgroup v2: a child of our own cgroup when its ``cgroup.subtree_control`` already enables memory
  and pids, else a sibling under our parent (root may move a process between them);
- cgroup v1: a child of our cgroup in the ``memory`` and ``pids`` hierarchies.
The run enters it through a shell that writes its own pid to ``cgroup.procs`` and execs the
sandbox, so every process of the answer is born inside. Where none can be had, the grader's
watchdog sums the namespace's memory and counts its processes instead (workloads/grading/sandbox.py), and
``ddtune doctor`` says which holds. Names carry our pid so a later run removes ones we left behind.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import subprocess
from dataclasses import dataclass

ROOT = "/sys/fs/cgroup"
PREFIX = "ddtune-sandbox-"
_counter = itertools.count()


@dataclass(frozen=True)
class Cgroup:
    version: str  # "v2" or "v1"
    dirs: tuple[str, ...]  # v2: one; v1: the memory and the pids cgroup


def _own() -> dict[str, str]:
    """hierarchy key ("" for v2, else the controller list) -> our path in it."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return {}
    return {parts[1]: parts[2] for parts in (line.split(":", 2) for line in lines) if len(parts) == 3}


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _parents() -> tuple[str, tuple[str, ...]] | None:
    """Where our cgroups go: ("v2", (dir,)) or ("v1", (memory dir, pids dir)), or None."""
    own = _own()
    if "" in own and os.path.exists(f"{ROOT}/cgroup.controllers"):
        mine = os.path.normpath(f"{ROOT}/{own['']}")
        for base in (mine, os.path.dirname(mine)):
            if base.startswith(ROOT) and {"memory", "pids"} <= set(_read(f"{base}/cgroup.subtree_control").split()):
                return "v2", (base,)
        return None
    dirs = []
    for controller in ("memory", "pids"):
        key = next((k for k in own if controller in k.split(",")), None)
        base = os.path.normpath(f"{ROOT}/{controller}/{own[key]}") if key is not None else ""
        if not key or not os.path.isdir(base):
            return None
        dirs.append(base)
    return "v1", tuple(dirs)


def unavailable() -> str | None:
    """None when a cgroup per answer can be made and entered here, else why not.
    ``DDTUNE_SANDBOX_CGROUP=off`` does without (the tests use it to cover the watchdog)."""
    if os.environ.get("DDTUNE_SANDBOX_CGROUP", "").strip() == "off":
        return "turned off by DDTUNE_SANDBOX_CGROUP=off"
    return _probe()


@functools.cache
def _probe() -> str | None:
    where = _parents()
    if where is None:
        return "no cgroup hierarchy with memory and pids controllers that this process can use"
    try:
        group = create(1 << 30, 64)
    except OSError as exc:
        return f"cannot create a cgroup under {where[1][0]}: {exc.strerror}"
    try:
        done = subprocess.run([*enter_argv(group), "true"], capture_output=True, timeout=10)
        if done.returncode != 0:
            return f"cannot move a process into {group.dirs[0]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot move a process into {group.dirs[0]}: {exc}"
    finally:
        remove(group)
    return None


def create(memory_bytes: int, max_procs: int) -> Cgroup:
    """A new, limited cgroup. Raises OSError when it cannot be made."""
    where = _parents()
    if where is None:
        raise OSError(0, "no usable cgroup hierarchy")
    version, parents = where
    sweep_stale(parents)
    name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
    dirs = tuple(os.path.join(parent, name) for parent in parents)
    made: list[str] = []
    try:
        for path in dirs:
            os.mkdir(path, 0o755)
            made.append(path)
        if version == "v2":
            _write(f"{dirs[0]}/memory.max", memory_bytes)
            _write(f"{dirs[0]}/memory.swap.max", 0, optional=True)
            _write(f"{dirs[0]}/pids.max", max_procs)
        else:
            _write(f"{dirs[0]}/memory.limit_in_bytes", memory_bytes)
            _write(f"{dirs[0]}/memory.memsw.limit_in_bytes", memory_bytes, optional=True)
            _write(f"{dirs[1]}/pids.max", max_procs)
    except OSError:
        remove(Cgroup(version, tuple(made)))
        raise
    return Cgroup(version, dirs)


def _write(path: str, value: int, optional: bool = False) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(str(value))
    except OSError:
        if not optional:
            raise


def enter_argv(group: Cgroup) -> list[str]:
    """argv that puts itself in ``group`` and execs the rest (exit 125 if it cannot)."""
    script = 'for d in $1; do echo $$ > "$d/cgroup.procs" || exit 125; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", " ".join(group.dirs)]


def processes(group: Cgroup) -> list[int]:
    """The pids in ``group`` (its pids hierarchy under v1): every process of the run, the wrapper's
    included, and nothing else; a few lines to read where a walk of /proc reads every process's."""
    return [int(p) for p in _read(f"{group.dirs[-1]}/cgroup.procs").split()]


def memory_exceeded(group: Cgroup) -> bool:
    """Did the kernel kill a process of this group for going past its memory limit?"""
    name = "memory.events" if group.version == "v2" else "memory.oom_control"
    return _counter_of(f"{group.dirs[0]}/{name}", "oom_kill") > 0


def procs_exceeded(group: Cgroup) -> bool:
    """Did this group refuse a fork for going past its process limit?"""
    return _counter_of(f"{group.dirs[-1]}/pids.events", "max") > 0


def _counter_of(path: str, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def remove(group: Cgroup) -> None:
    """Kill what is left inside and remove the cgroup(s); best effort, bounded."""
    for path in group.dirs:
        for _ in range(50):
            pids = [int(p) for p in _read(f"{path}/cgroup.procs").split()]
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                if not pids:
                    break
                os.sched_yield()


def sweep_stale(parents: tuple[str, ...]) -> None:
    """Remove empty cgroups a dead ddtune left behind (its pid is in the name)."""
    for parent in parents:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            match = re.fullmatch(rf"{PREFIX}(\d+)-\d+", name)
            if match and not os.path.exists(f"/proc/{match.group(1)}"):
                try:
                    os.rmdir(os.path.join(parent, name))
                except OSError:
                    pass

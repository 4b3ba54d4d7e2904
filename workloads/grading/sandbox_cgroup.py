"""A cgroup per graded answer, where one can be had: limits for the whole answer, not per process.

Memory (shared memory and tmpfs pages included, as the kernel charges them to the cgroup), the
number of processes and the CPU are capped over everything the answer starts. Where this process
may create cgroups (root, or a delegated subtree):
- cgroup v2: a child of our own cgroup when its ``cgroup.subtree_control`` already enables memory
  and pids, else a sibling under our parent (root may move a process between them); ``cpu.max``
  caps its CPU where the cpu controller is enabled there too, and ``cpu.stat`` counts it always;
- cgroup v1: a child of our cgroup in the ``memory`` and ``pids`` hierarchies, and in ``cpu``
  (``cpu.cfs_quota_us`` caps) and ``cpuacct`` (``cpuacct.usage`` counts) where they are mounted.
The run enters it through a shell that writes its own pid to ``cgroup.procs`` and execs the
sandbox, so every process of the answer is born inside. Where none can be had, the grader's
watchdog sums the namespace's memory and CPU time and counts its processes instead
(workloads/grading/sandbox.py), and ``ddtune doctor`` says which holds. The CPU cap keeps an answer
of many spinning processes to ``cpus`` CPUs (so grading cannot starve the server being measured);
the watchdog ends it once all of them together have used the answer's CPU seconds.

Names carry the grader's PID namespace, pid and a random token (workloads/grading/sandbox_owner.py):
a grader removes the cgroups it made, and a leftover only when its maker is provably gone, never
one of a grader in another PID namespace.
"""

from __future__ import annotations

import functools
import itertools
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from workloads.grading import sandbox_owner

ROOT = "/sys/fs/cgroup"
PREFIX = "ddtune-sandbox-"
PERIOD_US = 100_000  # the CPU cap's period: the answer may run cpus * this per period
_counter = itertools.count()


@dataclass(frozen=True)
class Cgroup:
    version: str  # "v2" or "v1"
    dirs: tuple[str, ...]  # every cgroup the answer enters: v2 one; v1 one per hierarchy used
    memory: str  # the cgroup that holds the memory limit (and its events)
    pids: str  # ... the process limit, and lists the answer's processes
    cpus: float | None  # the CPU cap written, in CPUs (None: no cap here, the watchdog's total alone)
    usage: str | None  # the file that counts the CPU time of the answer's processes, if any


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


def _bases() -> tuple[str, dict[str, str]] | None:
    """Where an answer's cgroups go: ("v2", {controller: dir}) or ("v1", {controller: dir}), or None.
    memory and pids are required; cpu (the cap) and, under v1, cpuacct (the count) where present."""
    own = _own()
    if "" in own and os.path.exists(f"{ROOT}/cgroup.controllers"):
        mine = os.path.normpath(f"{ROOT}/{own['']}")
        for base in (mine, os.path.dirname(mine)):
            enabled = set(_read(f"{base}/cgroup.subtree_control").split())
            if base.startswith(ROOT) and {"memory", "pids"} <= enabled:
                return "v2", {c: base for c in ("memory", "pids", "cpu") if c in enabled}
        return None
    bases = {}
    for controller in ("memory", "pids", "cpu", "cpuacct"):
        key = next((k for k in own if controller in k.split(",")), None)
        base = os.path.normpath(f"{ROOT}/{controller}/{own[key]}") if key is not None else ""
        if key is not None and os.path.isdir(base):
            bases[controller] = base
        elif controller in ("memory", "pids"):
            return None
    return "v1", bases


def unavailable() -> str | None:
    """None when a cgroup per answer can be made and entered here, else why not.
    ``DDTUNE_SANDBOX_CGROUP=off`` does without (the tests use it to cover the watchdog)."""
    if os.environ.get("DDTUNE_SANDBOX_CGROUP", "").strip() == "off":
        return "turned off by DDTUNE_SANDBOX_CGROUP=off"
    return _probe()


def cpu_cap_unavailable() -> str | None:
    """None when an answer's cgroup here caps its CPU, else why not (the watchdog's total stands alone)."""
    why = unavailable()
    if why is not None:
        return why
    where = _bases()
    return None if where is not None and "cpu" in where[1] else "no cpu controller for the answer's cgroup"


@functools.cache
def _probe() -> str | None:
    where = _bases()
    if where is None:
        return "no cgroup hierarchy with memory and pids controllers that this process can use"
    try:
        group = create(1 << 30, 64)
    except OSError as exc:
        return f"cannot create a cgroup under {where[1]['memory']}: {exc.strerror}"
    try:
        done = subprocess.run([*enter_argv(group), "true"], capture_output=True, timeout=10)
        if done.returncode != 0:
            return f"cannot move a process into {group.dirs[0]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot move a process into {group.dirs[0]}: {exc}"
    finally:
        remove(group)
    return None


def create(memory_bytes: int, max_procs: int, cpus: float | None = None) -> Cgroup:
    """A new, limited cgroup; ``cpus``: the CPU cap, where a cpu controller is there to hold it.
    Raises OSError when it cannot be made."""
    where = _bases()
    if where is None:
        raise OSError(0, "no usable cgroup hierarchy")
    version, bases = where
    sweep_stale(bases.values())
    name = f"{PREFIX}{sandbox_owner.tag()}-{next(_counter)}"
    made: dict[str, str] = {}  # real path of a hierarchy's base -> our cgroup in it
    at: dict[str, str] = {}  # controller -> our cgroup that holds it
    try:
        for controller, base in bases.items():
            real = os.path.realpath(base)
            if real not in made:  # v2, or v1 hierarchies mounted together (cpu,cpuacct), share one
                try:
                    os.mkdir(os.path.join(base, name), 0o755)
                except OSError:
                    if controller in ("memory", "pids"):
                        raise
                    continue  # no cap or count from this one: the watchdog stands in
                made[real] = os.path.join(base, name)
            at[controller] = made[real]
        group = Cgroup(version, tuple(made.values()), at["memory"], at["pids"], None, None)
        if version == "v2":
            _write(f"{group.memory}/memory.max", memory_bytes)
            _write(f"{group.memory}/memory.swap.max", 0, optional=True)
            _write(f"{group.pids}/pids.max", max_procs)
        else:
            _write(f"{group.memory}/memory.limit_in_bytes", memory_bytes)
            _write(f"{group.memory}/memory.memsw.limit_in_bytes", memory_bytes, optional=True)
            _write(f"{group.pids}/pids.max", max_procs)
    except OSError:
        remove(Cgroup(version, tuple(made.values()), "", "", None, None))
        raise
    usage = f"{group.memory}/cpu.stat" if version == "v2" else (f"{at['cpuacct']}/cpuacct.usage"
                                                                   if "cpuacct" in at else None)
    return Cgroup(version, group.dirs, group.memory, group.pids, _cap(version, at.get("cpu"), cpus), usage)


def _cap(version: str, path: str | None, cpus: float | None) -> float | None:
    """Write the CPU cap into ``path`` (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``); the cap, or None."""
    if path is None or cpus is None:
        return None
    quota = max(1000, round(cpus * PERIOD_US))
    try:
        if version == "v2":
            with open(f"{path}/cpu.max", "w") as fh:
                fh.write(f"{quota} {PERIOD_US}")
        else:
            _write(f"{path}/cpu.cfs_period_us", PERIOD_US)
            _write(f"{path}/cpu.cfs_quota_us", quota)
    except OSError:
        return None
    return quota / PERIOD_US


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
    return [int(p) for p in _read(f"{group.pids}/cgroup.procs").split()]


def memory_exceeded(group: Cgroup) -> bool:
    """Did the kernel kill a process of this group for going past its memory limit?"""
    name = "memory.events" if group.version == "v2" else "memory.oom_control"
    return _counter_of(f"{group.memory}/{name}", "oom_kill") > 0


def procs_exceeded(group: Cgroup) -> bool:
    """Did this group refuse a fork for going past its process limit?"""
    return _counter_of(f"{group.pids}/pids.events", "max") > 0


def cpu_seconds(group: Cgroup) -> float | None:
    """CPU time of every process the group ever held, the exited ones included; None where no
    cgroup counts it here (the watchdog sums the live processes' instead)."""
    if group.usage is None:
        return None
    if group.version == "v2":
        return _counter_of(group.usage, "usage_usec") / 1e6
    text = _read(group.usage).strip()
    return int(text) / 1e9 if text.isdigit() else None


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


def sweep_stale(bases: Iterable[str]) -> None:
    """Remove empty cgroups that a grader of this PID namespace, now gone, left behind; never one of
    a live grader, nor of a grader in another PID namespace (sandbox_owner.stale)."""
    for base in set(bases):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            if name.startswith(PREFIX) and sandbox_owner.stale(name, PREFIX):
                try:
                    os.rmdir(os.path.join(base, name))
                except OSError:
                    pass

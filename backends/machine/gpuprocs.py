"""What a GPU process is, beyond the pid and bytes NVML lists: its user and command (from /proc,
through psutil) and its share of the GPU's SM time (NVML's per-process utilisation samples), for a
process table like nvitop's. Every reader here is best effort: a process that exited, another
user's process we may not read, or an NVML without per-process samples gives None, never an error.
"""

from __future__ import annotations

import os
import time
from typing import Any

import psutil

from backends.core.plaintext import plain

COMMAND_CHARS = 300   # a command line is cut here: a table shows its start
UTIL_SPAN_US = 3_000_000  # the per-process samples asked for: the last 3 s (NVML keeps a short buffer)


def holds_nvidia_device(pid: int) -> bool | None:
    """True if the process has a /dev/nvidia* file open, False if it has none, None if we cannot tell."""
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    for name in names:
        try:
            if os.readlink(f"{fd_dir}/{name}").startswith("/dev/nvidia"):
                return True
        except OSError:
            continue
    return False


def process_name(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/pid/stat): tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19] if ")" in stat else None


def user_and_command(pid: int) -> tuple[str | None, str | None]:
    """The process's user name (its uid when the name is unknown) and command line (plain text,
    cut at COMMAND_CHARS; its name when the command line is unreadable)."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            try:
                user: str | None = proc.username()
            except (KeyError, psutil.Error):  # a uid with no name in this namespace's passwd
                user = str(proc.uids().real)
            try:
                command = " ".join(proc.cmdline()) or proc.name()
            except psutil.AccessDenied:
                command = proc.name()
    except psutil.Error:
        return None, None
    return user, plain(command, one_line=True)[:COMMAND_CHARS] or None


def process_utilization(nvml: Any, handle: Any) -> dict[int, int]:
    """pid -> SM utilisation (percent) from NVML's latest per-process samples on one GPU; empty when
    the driver keeps none (no process ran lately, or it cannot sample per process)."""
    fn = getattr(nvml, "nvmlDeviceGetProcessUtilization", None)
    if fn is None:
        return {}
    try:
        samples = fn(handle, max(0, time.time_ns() // 1000 - UTIL_SPAN_US))
    except Exception:  # noqa: BLE001 - NVMLError (NotFound, NotSupported, pynvml's "success" with none), ctypes
        return {}
    latest: dict[int, tuple[int, int]] = {}
    for sample in samples or ():
        pid, stamp, util = int(sample.pid), int(getattr(sample, "timeStamp", 0)), int(sample.smUtil)
        if 0 <= util <= 100 and stamp >= latest.get(pid, (-1, 0))[0]:
            latest[pid] = (stamp, util)
    return {pid: util for pid, (_, util) in latest.items()}

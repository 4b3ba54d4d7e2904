"""Process groups and ports: spawn a server in its own session, find who listens on a port.

Stopping lives in backends.launch.ownership, which signals only what a record proves is ours. Thin I/O
over os/psutil; no knowledge of SGLang."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from backends.core.statefs import STATE
from backends.core.writes import open_append
from backends.core.paths import user_umask


@dataclass(frozen=True)
class PortOwner:
    port: int
    pid: int | None  # None: a socket of a process we may not inspect (another user's)
    name: str
    cmdline: str

    def describe(self) -> str:
        if self.pid is None:
            return f"port {self.port} is in use by a process ddtune cannot see (another user's, or root's)"
        return f"port {self.port} is in use by pid {self.pid} ({self.name}: {self.cmdline[:120]})"


def open_log(log_path: Path) -> int:
    """Create the server's log file, which must not exist yet (FileExistsError, also for a planted
    symlink: O_EXCL never follows one): a log read from its start belongs to one launch. 0600:
    SGLang dumps its server_args into the log, --api-key included. The state dir's append-opener
    (backends.core.writes under statefs.STATE): its folder checked, the file checked once open."""
    return open_append(log_path, STATE, new=True)


def spawn(argv: list[str] | tuple[str, ...], env: dict[str, str], log_path: Path,
          cwd: str | None = None, log_fd: int | None = None) -> subprocess.Popen:
    """Start argv in a new session (its own process group), stdout+stderr written to log_path
    (created by open_log unless ``log_fd`` is that file already open; spawn closes it).

    The log file, not a pipe, holds the output so the server outlives ddtune (a dead reader would
    SIGPIPE it); ddtune streams the file instead."""
    if log_fd is None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_fd = open_log(log_path)
    with open(log_fd, "ab", buffering=0) as log:
        return subprocess.Popen(list(argv), env=env, cwd=cwd, stdin=subprocess.DEVNULL, umask=user_umask(),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def is_running(pid: int | None, create_time: float | None = None) -> bool:
    """True when pid exists, is not a zombie, and (if given) started at create_time (no pid reuse)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time is None or abs(proc.create_time() - create_time) < 0.05
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is pgid."""
    members = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if os.getpgid(proc.info["pid"]) == pgid:
                members.append(proc.info["pid"])
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return members


def tree_pids(pid: int) -> set[int]:
    """pid and all its descendants."""
    try:
        proc = psutil.Process(pid)
        return {pid} | {c.pid for c in proc.children(recursive=True)}
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return {pid}


def reap(pid: int) -> None:
    """Collect the exit status of our own child so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def port_owner(port: int) -> PortOwner | None:
    """Who listens on TCP port (any local address, IPv4 or IPv6); None when nobody does.

    Several processes can hold one listening socket: every child forked while it is open, until its
    exec closes it (or for good, if it was passed on). The owner is the holder that started first;
    a holder is found by its ``/proc/<pid>/fd`` links, so another user's process is pid None
    unless we are root."""
    inodes = _listen_inodes(port)
    if not inodes:
        return None
    holders: list[tuple[float, int]] = []
    for pid in psutil.pids():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                started = create_time(pid)
                if started is not None:
                    holders.append((started, pid))
                break
    if not holders:
        return PortOwner(port, None, "?", "?")
    pid = min(holders)[1]
    try:
        proc = psutil.Process(pid)
        return PortOwner(port, pid, proc.name(), " ".join(proc.cmdline()))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return PortOwner(port, pid, "?", "?")


def _listen_inodes(port: int) -> set[str]:
    """The inodes of the TCP sockets in LISTEN state (0A) on ``port``, from /proc/net/tcp and tcp6."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                rows = fh.read().splitlines()[1:]
        except FileNotFoundError:  # tcp6: IPv6 is off on this host
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port:
                found.add(fields[9])
    return found


def wait_port_free(port: int, deadline: float, poll: float = 0.1) -> PortOwner | None:
    """Wait until nobody listens on port; returns the owner still there at the deadline, else None."""
    while True:
        owner = port_owner(port)
        if owner is None or time.monotonic() >= deadline:
            return owner
        time.sleep(poll)

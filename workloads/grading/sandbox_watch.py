"""The grader's watchdog's view of an answer's processes, read from /proc: the sandbox's PID namespace
(its pid 1, held as a pidfd, and its members), and what they use together (resident memory, CPU time)
where no cgroup counts it (workloads/grading/sandbox.py)."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def _processes() -> Iterator[tuple[int, bytes, int, int]]:
    """(pid, state, ppid, pgid) of every process this /proc shows."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2:
            yield int(entry), fields[0], int(fields[1]), int(fields[2])


class Namespace:
    """The sandbox's PID namespace seen from here: its pid 1 (held as a pidfd, so a recycled pid is
    never signalled) and its members. Killing pid 1 makes the kernel kill everything inside."""

    def __init__(self, wrapper_pid: int) -> None:
        self.wrapper_pid = wrapper_pid
        self.pidfd: int | None = None
        self.link = ""

    def find(self) -> bool:
        if self.pidfd is not None:
            return True
        own = os.readlink("/proc/self/ns/pid")
        for pid in self._children():
            try:
                pidfd = os.pidfd_open(pid)
                link = os.readlink(f"/proc/{pid}/ns/pid")
            except OSError:
                continue
            if link != own:
                self.pidfd, self.link = pidfd, link
                return True
            os.close(pidfd)
        return False

    def _children(self) -> list[int]:
        try:
            with open(f"/proc/{self.wrapper_pid}/task/{self.wrapper_pid}/children") as fh:
                return [int(pid) for pid in fh.read().split()]
        except OSError:  # a kernel without CONFIG_PROC_CHILDREN
            return [pid for pid, _, ppid, _ in _processes() if ppid == self.wrapper_pid]

    def members(self, among: list[int] | None = None) -> list[int]:
        """Pids in the namespace, in pid order (its pid 1 first). ``among``: the only candidates (the run's
        cgroup holds every process of the run; else all of /proc is read, a few hundred readlinks
        on a busy host, every 50 ms of every graded answer)."""
        found = []
        for pid in sorted(among) if among is not None else (int(e) for e in os.listdir("/proc") if e.isdigit()):
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") == self.link:
                    found.append(pid)
            except OSError:
                pass
        return found

    def kill(self, deadline_s: float = 5.0) -> None:
        """SIGKILL pid 1, then wait until it has exited, which the kernel allows only once the
        namespace is empty."""
        if self.pidfd is None:
            return
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        select.select([self.pidfd], [], [], deadline_s)
        os.close(self.pidfd)
        self.pidfd = None


def rss(pids: list[int]) -> int:
    """Resident bytes of these processes together (the watchdog's view where no cgroup holds)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total


def cpu(pids: list[int]) -> float:
    """CPU seconds of these processes and of the children they have reaped (the watchdog's view
    where no cgroup counts them): utime, stime, cutime and cstime of /proc/PID/stat."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            total += sum(int(field) for field in stat[stat.rfind(b")") + 2:].split()[11:15])
        except (OSError, ValueError):
            pass
    return total / TICKS

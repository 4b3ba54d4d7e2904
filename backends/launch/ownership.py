"""Signal only what ddtune can prove it started.

A state file is only a claim. Before any signal the claim must hold on the live system:

- the record names a leader pid, the process group that leader created (``pgid == pid``, as a
  ``start_new_session`` spawn makes it) and the leader's create time; a missing create time means
  "not ours";
- the group is never pid 1's, never ddtune's own group or session (``killpg(1)`` as root is
  ``kill(-1)``: every process on the machine);
- while the leader lives, it still has that create time and still leads that group;
- once the leader is gone (the OOM killer, a ``kill -9``), the survivors are the processes still in
  its group or session that started no earlier than it did. Linux does not reuse a pid while it is
  still some process's group or session id, so a member of that group cannot be a stranger, and the
  create time rules out a reused leader pid.

Survivors are signalled one by one through a pidfd opened and then re-checked against their create
time, so a pid that is reused between the listing and the signal is never hit.

None of that is a proof: pids and create times are public (``/proc``), so a forged record can name
a stranger exactly. The proof is the launch token: a random secret ddtune puts in the environment of
the server it launches (``DDTUNE_LAUNCH_TOKEN``, inherited by SGLang's schedulers) and in its own
0600 launch record. A process is ours only if its ``/proc/<pid>/environ`` holds that token, read
through the pidfd that will carry the signal (a process whose environ cannot be read is not
proven); the group is signalled only while its leader is proven so, just before ``killpg``.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import psutil

from backends.core.errors import ServerError

SAME_START_S = 0.05  # psutil's create times are rounded; a reused pid differs by far more
TOKEN_ENV = "DDTUNE_LAUNCH_TOKEN"


CRASH_ENV = "DDTUNE_CRASH_AT"  # tests only: SIGKILL ddtune at that step of a launch (backends.server.launchrec)


def new_token() -> str:
    return secrets.token_hex(16)


def server_env_of_launch(env: dict[str, str], token: str) -> dict[str, str]:
    """The launched server's environment: the token in, ddtune's own test hook out."""
    env = dict(env)
    env.pop(CRASH_ENV, None)
    env[TOKEN_ENV] = token
    return env


def crash_point(name: str) -> None:
    """SIGKILL this process here when DDTUNE_CRASH_AT names this step (tests only)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def token_verdict(pid: int, token: str | None) -> str | None:
    """None when ``pid``'s environment holds ``token``; else why not, as a phrase."""
    if not token:
        return "the record carries no launch token, so ddtune cannot prove it started that process"
    try:
        environ = _environ(pid)
    except OSError as exc:
        return f"its environment cannot be read ({exc.strerror}), so it is not proven to be the server ddtune started"
    entries = environ.split(b"\0")
    if f"{TOKEN_ENV}={token}".encode() in entries:
        return None
    if any(e.startswith(f"{TOKEN_ENV}=".encode()) for e in entries):
        return "it carries another launch's token: it is not the server this record names"
    return f"it does not carry the launch token ddtune gave the server it started ({TOKEN_ENV})"


def _environ(pid: int, tries: int = 20) -> bytes:
    """``/proc/<pid>/environ``. A process caught inside its exec (just spawned: the parent's
    ``Popen`` returns before the new image has its stack) reads empty for a moment, so an empty
    read is retried for up to ~0.1 s; an environ still empty then is empty (``env -i``, a zombie)."""
    for _ in range(tries):
        with open(f"/proc/{pid}/environ", "rb") as fh:
            environ = fh.read()
        if environ:
            break
        time.sleep(0.005)
    return environ


def carries_token(pid: int, token: str | None) -> bool:
    return token_verdict(pid, token) is None


def token_holders(token: str) -> dict[int, float]:
    """Every live process whose environment holds ``token`` (pid -> create time): what a launch left,
    found with no record of its pid (the launching ddtune was killed before it wrote one), or what
    left the server's session (``setsid`` and a double fork: a daemon). Reads every process's
    environ: for a stop or a lost launch only, never on a poll of a running server."""
    found: dict[int, float] = {}
    needle = f"{TOKEN_ENV}={token}".encode()
    me = os.getpid()
    for pid in psutil.pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            started = _create_time(psutil.Process(pid))  # only for a holder: the scan stays cheap
        except (OSError, psutil.NoSuchProcess):
            continue
        if started is not None:
            found[pid] = started
    return found


class NotOurs(ServerError):
    """The record does not prove ddtune started that process: nothing is signalled."""


@dataclass(frozen=True)
class Owned:
    """The live processes a record proves are ours: the leader (if alive) and everything it left."""

    pgid: int
    leader: int
    leader_alive: bool
    pids: dict[int, float]  # pid -> create time, leader included while it lives
    create_time: float      # the leader's, as recorded
    token: str | None = None  # the launch token each of them carries (None: the caller is their parent)
    proven: bool = False      # True: every signal needs the token in the target's environ
    outside: tuple[int, ...] = ()  # those of pids that left its group, session and tree: found by the token


@dataclass(frozen=True)
class StopReport:
    """How a stop went: whether SIGKILL was needed, which pids it hit, and which were left."""

    terminated: bool
    killed: tuple[int, ...]
    left: tuple[int, ...]
    stopped: tuple[int, ...] = ()    # every owned pid that was found and is gone now
    leader_alive: bool = True        # False: only survivors of a dead leader were stopped
    outside: tuple[int, ...] = ()    # of stopped, those that had left its session (found by the token)


def check_record(pid: object, pgid: object, create_time: object) -> None:
    """Raise NotOurs unless the record could name a group ddtune created (before looking at /proc)."""
    who = f"pid {pid}"
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        raise NotOurs(f"refusing to signal {who}: the record names no valid server pid",
                      hint="nothing was signalled; the state file is not one ddtune wrote")
    if not isinstance(pgid, int) or isinstance(pgid, bool) or pgid <= 1:
        raise NotOurs(f"refusing to signal {who}: the record's process group {pgid} is not one ddtune creates "
                      "(signalling group 1 would signal every process on the machine)",
                      hint="nothing was signalled; stop that process yourself if it is yours")
    if pgid != pid:
        raise NotOurs(f"refusing to signal {who}: ddtune starts each server as the leader of its own group, "
                      f"but the record says group {pgid}",
                      hint="nothing was signalled; the state file was not written by ddtune")
    if not isinstance(create_time, (int, float)) or isinstance(create_time, bool):
        raise NotOurs(f"refusing to signal {who}: the record has no process create time, so ddtune cannot "
                      "prove it started that process",
                      hint="nothing was signalled; stop it yourself if it is yours (kill PID)")
    if pgid in (os.getpgrp(), os.getsid(0)):
        raise NotOurs(f"refusing to signal {who}: group {pgid} is ddtune's own group or session",
                      hint="nothing was signalled")


def _create_time(proc: psutil.Process) -> float | None:
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def owned(pid: int, pgid: int, create_time: float, token: str | None = None, *, proof: bool = True) -> Owned:
    """The live processes the record proves are ours. Raises NotOurs when the live system
    contradicts the record (the pid or the group now belongs to a process started earlier, or the
    live leader does not carry the launch ``token``). ``proof=False``: no token check, for a caller
    that spawned the process itself and holds it (a load worker); a record read from disk never."""
    check_record(pid, pgid, create_time)
    need = proof
    me = os.getpid()
    leader_alive = False
    try:
        leader = psutil.Process(pid)
        started = _create_time(leader)
    except psutil.NoSuchProcess:
        started = None
    if started is not None:
        if abs(started - create_time) < SAME_START_S:
            if _pgid(pid) not in (pgid, None):
                raise NotOurs(f"refusing to signal pid {pid}: it left its process group {pgid}",
                              hint="stop it yourself (kill PID) if it is the server")
            leader_alive = _pgid(pid) == pgid
            why = token_verdict(pid, token) if need and leader_alive else None
            if why is not None:
                raise NotOurs(f"refusing to signal pid {pid}: {why}",
                              hint="nothing was signalled; stop it yourself (kill PID) if it is yours")
        elif started < create_time:
            # a process with that pid but older than our server: the record is not about it
            raise NotOurs(f"refusing to signal pid {pid}: that pid belongs to a process started before the "
                          "recorded server", hint="nothing was signalled; the record was stale or edited")
        else:
            # our leader died and its pid was reused. Linux reuses no pid that is still a group or
            # session id, so nothing of ours is left in group pgid: it is the newcomer's now. Only
            # what left the session carrying the launch's token can still be ours.
            return _with_outside(Owned(pgid=pgid, leader=pid, leader_alive=False, pids={}, create_time=create_time,
                                       token=token, proven=need))
    found: dict[int, float] = {}
    for proc in _live_processes():
        if proc.pid == me:
            continue
        try:
            in_group = os.getpgid(proc.pid) == pgid or os.getsid(proc.pid) == pgid
        except (ProcessLookupError, PermissionError):
            continue
        if not in_group:
            continue
        started_at = _create_time(proc)
        if started_at is None or started_at < create_time - SAME_START_S:
            continue
        if need and not carries_token(proc.pid, token):
            continue  # in the group or session, but not launched by us: never a survivor of ours
        found[proc.pid] = started_at
    if leader_alive:
        for child in _descendants(pid):
            started_at = _create_time(child)
            if started_at is not None and child.pid != me and (not need or carries_token(child.pid, token)):
                found[child.pid] = started_at
    return _with_outside(Owned(pgid=pgid, leader=pid, leader_alive=leader_alive, pids=found,
                               create_time=create_time, token=token, proven=need))


def _with_outside(found: Owned) -> Owned:
    """``found`` plus what left the group, the session and the leader's tree (``setsid`` and a
    double fork) but carries the launch's token and started no earlier than the leader: a daemon
    the server spawned. Only for a record proven by a token: nothing without it is ever added."""
    if not found.proven or not found.token:
        return found
    outside = {pid: started for pid, started in token_holders(found.token).items()
               if pid not in found.pids and started >= found.create_time - SAME_START_S}
    if not outside:
        return found
    return replace(found, pids={**found.pids, **outside}, outside=tuple(sorted(outside)))


def _live_processes() -> Iterator[psutil.Process]:
    """Every live process, each read afresh. Not ``psutil.process_iter()``: it keeps the Process it
    made for a pid from one call to the next, and once that pid is reused (pids wrap: pid_max is often
    32768) the kept object still gives the old process's create time, so a survivor of ours looked
    older than its server and was left running."""
    for pid in psutil.pids():
        try:
            yield psutil.Process(pid)
        except psutil.NoSuchProcess:
            continue


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def _signal_pid(pid: int, started: float, sig: int, token: str | None = None, proven: bool = False,
                group: int | None = None) -> bool:
    """Signal pid only if it is still the process that started at ``started`` and (``proven``) still
    carries ``token``: both read after the pidfd is open, so a pid reused meanwhile is never hit
    (the pidfd names the old process; a signal to it fails). ``group``: signal that whole process
    group instead, which pid must still lead (checked the same way, just before)."""
    try:
        fd = os.pidfd_open(pid)
    except (ProcessLookupError, OSError, AttributeError):
        return False
    try:
        live = _create_time(psutil.Process(pid))
        if live is None or abs(live - started) >= SAME_START_S:
            return False
        if proven and not carries_token(pid, token):
            return False
        if group is not None:
            if _pgid(pid) != group:
                return False
            signal.pidfd_send_signal(fd, 0)  # still that process (not reaped, so its group is its own)
            os.killpg(group, sig)
            return True
        signal.pidfd_send_signal(fd, sig)
        return True
    except (psutil.NoSuchProcess, ProcessLookupError, PermissionError):
        return False
    finally:
        os.close(fd)


def signal_owned(found: Owned, sig: int) -> None:
    """The whole group at once while its proven leader lives (new forks included), then each owned
    process outside the group (same session) by pidfd; survivors of a dead leader only by pidfd."""
    if found.leader_alive:
        _signal_pid(found.leader, found.create_time, sig, found.token, found.proven, group=found.pgid)
    for pid, started in found.pids.items():
        if not found.leader_alive or _pgid(pid) != found.pgid:
            _signal_pid(pid, started, sig, found.token, found.proven)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _alive(found: Owned) -> Owned:
    """What is ours now: the owned processes still running plus anything the group forked since,
    proved again from the record (a leader that died meanwhile leaves survivors, not strangers).
    Zombies count as gone; reaping is the parent's business (a Popen keeps its exit status)."""
    try:
        return owned(found.leader, found.pgid, found.create_time, found.token, proof=found.proven)
    except NotOurs:  # e.g. the proof cannot be read again: an exiting process's environ is gone
        exiting = {pid: started for pid, started in found.pids.items() if _same_live(pid, started)}
        return Owned(found.pgid, found.leader, False, exiting, found.create_time, found.token, found.proven,
                     tuple(p for p in found.outside if p in exiting))


def _same_live(pid: int, started: float) -> bool:
    """Still the process proven a moment ago (same pid, same start), and not yet a zombie: one that
    is mid-exit has not stopped yet, though nothing of it can be read any more."""
    try:
        proc = psutil.Process(pid)
        live = _create_time(proc)
        return live is not None and abs(live - started) < SAME_START_S and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(found: Owned, deadline: float, poll: float = 0.1) -> Owned:
    """Wait until none of the owned processes lives; returns what is left at the deadline."""
    while True:
        left = _alive(found)
        if not left.pids or time.monotonic() >= deadline:
            return left
        time.sleep(poll)


def stop_owned(found: Owned, term_timeout: float, kill_timeout: float = 10.0) -> StopReport:
    """SIGTERM what is ours, wait up to term_timeout, then SIGKILL what is left of it."""
    everyone, outside = set(found.pids), set(found.outside)
    if not found.pids:
        return StopReport(True, (), (), (), found.leader_alive)
    signal_owned(found, signal.SIGTERM)
    left = wait_gone(found, time.monotonic() + term_timeout)
    outside |= set(left.outside)
    if not left.pids:
        return StopReport(True, (), (), tuple(sorted(everyone)), found.leader_alive, tuple(sorted(outside)))
    everyone |= set(left.pids)
    signal_owned(left, signal.SIGKILL)
    still = wait_gone(left, time.monotonic() + kill_timeout)
    gone = tuple(sorted(everyone - set(still.pids)))
    return StopReport(False, tuple(sorted(left.pids)), tuple(sorted(still.pids)), gone, found.leader_alive,
                      tuple(sorted(outside & set(gone))))


def describe_stop(pid: int | None, report: StopReport) -> str:
    """What a stop did, in one true sentence."""
    others = [p for p in report.stopped if p != pid]
    if not report.stopped:
        return f"pid {pid} had already exited and left nothing running: nothing to stop"
    how = "after SIGTERM" if report.terminated else f"SIGKILL needed for pids {list(report.killed)}"
    left = f"; still running: pids {list(report.left)}" if report.left else ""
    away = f"pids {list(report.outside)}, which had left its session (found by its launch token)"
    if not report.leader_alive:  # never "stopped pid N" for a leader that was gone: say it had exited
        return f"pid {pid} had already exited; stopped the {len(others)} process(es) it left running " \
               f"(pids {others}) {how}" + (f", among them {away}" if report.outside else "") + left
    inside = len(others) - len(report.outside)
    extra = f" and {inside} process(es) of its group" if inside else ""
    return f"stopped pid {pid}{extra} {how}" + (f"; also {away}" if report.outside else "") + left

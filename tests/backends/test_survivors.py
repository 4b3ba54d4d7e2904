"""A server whose leader died outside ddtune (the OOM killer) leaves its schedulers running and
holding the GPU: ``down`` and the next ``up`` find them by the recorded group, stop them, and say so."""

import contextlib
import os
import signal
import time

import psutil
import pytest

from backends.launch.process import group_members
from tests.backends.lifecycle_support import config, headless

CHILDREN = ("--sim-load-seconds", "0.3", "--sim-children", "2", "--sim-orphan-seconds", "300")


def kill_leader_only(state) -> list[int]:
    """SIGKILL the leader alone (as the OOM killer does); returns the children it leaves behind."""
    children = [p for p in group_members(state.pgid) if p != state.pid]
    assert len(children) == 2, children
    os.kill(state.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.waitpid(state.pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not psutil.pid_exists(state.pid) or psutil.Process(state.pid).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.05)
    assert all(psutil.pid_exists(p) for p in children)
    return children


def gone(pids) -> bool:
    return all(not psutil.pid_exists(p) or psutil.Process(p).status() == psutil.STATUS_ZOMBIE for p in pids)


async def test_down_stops_what_a_dead_leader_left_running(tmp_path, groups, spawn):
    bystander = spawn(["sleep", "600"])  # a process of its own group: must be untouched
    cfg = config(tmp_path, extra=CHILDREN)
    state = await headless(cfg).up()
    groups.track(state.pgid)
    children = kill_leader_only(state)

    notes: list[str] = []
    stopped = await headless(cfg, notes=notes).stop()  # a fresh session: like a new ddtune
    assert stopped is not None and gone(children)
    assert f"pid {state.pid} had already exited" in stopped.reason
    assert "stopped the 2 process(es) it left running" in stopped.reason
    assert all(str(p) in stopped.reason for p in children)
    assert bystander.poll() is None


async def test_up_stops_the_survivors_before_starting_beside_them(tmp_path, groups):
    cfg = config(tmp_path, extra=CHILDREN)
    old = await headless(cfg).up()
    groups.track(old.pgid)
    children = kill_leader_only(old)

    notes: list[str] = []
    new = await headless(cfg, notes=notes).up()
    groups.track(new.pgid)
    assert new.phase == "ready" and new.pid != old.pid
    assert gone(children)
    assert any(f"pid {old.pid} had already exited" in n and "left running" in n for n in notes), notes


# --- a daemon that left the server's session (setsid + double fork) but carries its launch token ---

DAEMON = ("--sim-load-seconds", "0.3", "--sim-daemons", "1", "--sim-orphan-seconds", "300")


def carriers(token: str) -> list[int]:
    """The live processes whose environment holds the launch token, read here from /proc."""
    needle = f"DDTUNE_LAUNCH_TOKEN={token}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0") and psutil.Process(int(name)).status() != psutil.STATUS_ZOMBIE:
                        found.append(int(name))
            except (OSError, psutil.Error):
                continue
    return found


def daemons_of(state) -> list[int]:
    """The simulator's daemon: outside the server's session, carrying its token (it starts before ready)."""
    found = [p for p in carriers(state.token) if os.getsid(p) != state.pid]
    assert len(found) == 1 and os.getpgid(found[0]) != state.pgid, found
    return found


@pytest.fixture
def reaped():
    """Launch tokens of the servers a test started: whatever still carries one at teardown is
    SIGKILLed (a daemon outlives its server; a pid alone could be a stranger's by then)."""
    tokens: list[str] = []
    yield tokens
    for pid in (p for token in tokens for p in carriers(token)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_down_stops_a_daemon_that_left_the_session_and_names_it(tmp_path, groups, spawn, reaped):
    bystander = spawn(["sleep", "600"])  # its own session, no token: never touched
    cfg = config(tmp_path, extra=DAEMON)
    state = await headless(cfg).up()
    groups.track(state.pgid)
    reaped.append(state.token)
    daemons = daemons_of(state)

    stopped = await headless(cfg).stop()  # a fresh session: like a new ddtune
    assert stopped is not None and gone(daemons) and gone([state.pid])
    assert f"pids {daemons}, which had left its session (found by its launch token)" in stopped.reason
    assert carriers(state.token) == [] and bystander.poll() is None


async def test_up_stops_a_daemon_a_dead_leader_left_outside_its_session(tmp_path, groups, reaped):
    cfg = config(tmp_path, extra=DAEMON)
    old = await headless(cfg).up()
    groups.track(old.pgid)
    reaped.append(old.token)
    daemons = daemons_of(old)
    os.kill(old.pid, signal.SIGKILL)  # the OOM killer: the daemon lives on outside the group
    deadline = time.monotonic() + 30
    while not gone([old.pid]) and time.monotonic() < deadline:
        time.sleep(0.05)

    notes: list[str] = []
    new = await headless(cfg, notes=notes).up()
    groups.track(new.pgid)
    reaped.append(new.token)  # the new server's own daemon: stopped at teardown
    assert new.phase == "ready" and gone(daemons) and carriers(old.token) == []
    assert any(f"pid {old.pid} had already exited" in n and f"among them pids {daemons}" in n for n in notes), notes

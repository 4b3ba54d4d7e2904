"""A server whose leader died outside ddtune (the OOM killer) leaves its schedulers running and
holding the GPU: ``down`` and the next ``up`` find them by the recorded group, stop them, and say so."""

import os
import signal
import time

import psutil

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

"""Restart safety: the old process race, a foreign port owner, children left in the group."""

import asyncio
import socket
from pathlib import Path

import psutil
import pytest

from backends.core.errors import ServerError
from backends.launch.process import group_members, port_owner
from backends.launch.readiness import ReadinessProbe
from backends.server.record import load_state
from tests.backends.lifecycle_support import FAST, PHASED, config, headless


async def test_old_process_race_ready_only_for_the_new_pid(tmp_path, state_dir, groups):
    """The old server keeps answering for 2 s after SIGTERM (drain); ddtune must wait it out and
    declare ready only for the pid it started."""
    cfg = config(tmp_path, extra=PHASED + ("--sim-drain-seconds", "2"))
    old = await headless(cfg).up()
    groups.track(old.pgid)
    assert old.phase == "ready"

    # While the old server answers, a probe for any other pid refuses it and names the owner.
    async with ReadinessProbe(old.url, old.port, expected_pid=old.pid + 999_999) as probe:
        result = await probe.probe()
    assert not result.ready and f"pid {old.pid}" in result.reason and result.owner_pid == old.pid

    phases = []
    session = headless(cfg.with_knobs({"window": 1024}), phases=phases)
    new = await session.restart()
    groups.track(new.pgid)
    assert new.phase == "ready", new.reason
    assert new.pid != old.pid
    assert not psutil.pid_exists(old.pid) or psutil.Process(old.pid).status() == psutil.STATUS_ZOMBIE
    assert group_members(old.pgid) == []
    assert port_owner(new.port).pid == new.pid
    seen = [p.phase for p in phases]
    assert seen[0] == "stopping-old" and "waiting-for-port-and-gpu" in seen and "loading-weights" in seen
    assert seen.index("stopping-old") < seen.index("waiting-for-port-and-gpu") < seen.index("loading-weights")
    assert all(p.pid == new.pid for p in phases if p.phase == "loading-weights")
    # the spawn ends the wait (port and GPU free) and begins the imports, before the new log says anything
    starting = [p for p in phases if p.phase == "starting-process"]
    assert starting and starting[0].detail == f"pid {new.pid} importing"
    assert seen.index("waiting-for-port-and-gpu") < seen.index("starting-process") < seen.index("loading-weights")
    assert new.effective["window_size"] == 1024 and new.mismatches == ()
    assert load_state().knobs["window"] == 1024


async def test_foreign_port_owner_is_refused_before_launch(tmp_path, state_dir, groups):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        session = headless(config(tmp_path, port=port))
        with pytest.raises(ServerError) as info:
            await session.up()
        import os

        assert f"port {port} is in use by pid {os.getpid()}" in info.value.message
        assert "refusing to start" in info.value.message
        assert "port" in info.value.hint
    assert load_state() is None  # nothing was launched


async def test_children_left_in_the_group_are_killed(tmp_path, state_dir, groups):
    """Scheduler-like children that ignore nothing but outlive a SIGKILLed parent: stop kills the group."""
    cfg = config(tmp_path, extra=FAST + ("--sim-children", "2", "--sim-hang-at", "shutdown"), stop_timeout_s=1)
    session = headless(cfg)
    state = await session.up()
    groups.track(state.pgid)
    members = group_members(state.pgid)
    assert len(members) == 3
    stopped = await session.stop()
    assert stopped is not None
    assert group_members(state.pgid) == []
    assert port_owner(state.port) is None


async def test_up_twice_reattaches_instead_of_restarting(tmp_path, state_dir, groups):
    cfg = config(tmp_path)
    first = await headless(cfg).up()
    groups.track(first.pgid)
    notes = []
    second = await headless(cfg, notes=notes).up()
    assert second.pid == first.pid and second.phase == "ready"
    assert any("re-attached" in n for n in notes)


async def test_status_reports_stale_when_the_pid_is_gone(tmp_path, state_dir, groups):
    import os
    import signal

    cfg = config(tmp_path)
    state = await headless(cfg).up()
    groups.track(state.pgid)
    os.killpg(state.pgid, signal.SIGKILL)
    for _ in range(300):
        if not psutil.pid_exists(state.pid) or psutil.Process(state.pid).status() == psutil.STATUS_ZOMBIE:
            break
        await asyncio.sleep(0.1)
    try:
        os.waitpid(state.pid, 0)
    except ChildProcessError:  # reaped already (subprocess reaps a dropped Popen's child on the next spawn)
        pass
    assert not psutil.pid_exists(state.pid)
    current = headless(cfg).current()
    assert current.phase == "stale" and str(state.pid) in current.reason


async def test_mismatch_is_reported_when_the_server_runs_other_knobs(tmp_path, state_dir, groups):
    """Attach to a server that runs window 1024 while asking for 2048: the mismatch is named."""
    (tmp_path / "sim").mkdir()
    running = await headless(config(tmp_path / "sim", knobs={"window": 1024})).up()
    groups.track(running.pgid)
    attached = await headless(config(tmp_path, backend="endpoint", url=running.url,
                                          log_file=running.log_path, knobs={"window": 2048})).up()
    assert attached.phase == "ready"
    window = next(c for c in attached.checks if c.name == "window")
    assert (window.requested, window.effective, window.source, window.status) == \
        (2048, 1024, "draft runner line", "mismatch")
    assert "window: requested 2048, server says 1024 (draft runner line)" in attached.mismatches
    assert attached.effective["window_size"] == 1024
    reloaded = load_state()  # the typed checks survive server.json
    assert reloaded is not None and reloaded.checks == attached.checks


async def test_restarts_within_one_second_each_get_their_own_log(tmp_path, state_dir, groups, monkeypatch):
    """Two launches in the same second (an A/B sweep on a fast server) once shared one log file: the
    second start read the first's "Started server process [old pid]" and never became ready."""
    import time as time_mod

    monkeypatch.setattr(time_mod, "strftime", lambda fmt, *a: "20261201-000000")
    cfg = config(tmp_path)
    first = await headless(cfg).up()
    groups.track(first.pgid)
    second = await headless(cfg.with_knobs({"window": 1024})).restart()
    groups.track(second.pgid)
    third = await headless(cfg).restart()
    groups.track(third.pgid)
    assert [s.phase for s in (first, second, third)] == ["ready"] * 3, third.reason
    logs = [first.log_path, second.log_path, third.log_path]
    assert len(set(logs)) == 3
    for state in (first, second, third):
        text = Path(state.log_path).read_text()
        assert text.count("Started server process") == 1 and f"[{state.pid}]" in text


def test_spawn_refuses_to_append_to_an_existing_log(tmp_path):
    import os
    import sys

    from backends.launch.process import spawn

    log = tmp_path / "server.log"
    log.write_text("an older server's lines\n")
    with pytest.raises(FileExistsError):
        spawn([sys.executable, "-c", "pass"], dict(os.environ), log)
    assert log.read_text() == "an older server's lines\n"


async def test_a_launch_cut_short_still_finishes_recording_what_it_spawned():
    """Cancelling a start between fork and server.json must not lose the new server: the spawn step
    runs to its end (then the cancel goes on), so the record names the process and a stop finds it."""
    import asyncio

    from backends.server.lifecycle import uncancelled

    gate, recorded = asyncio.Event(), []

    async def spawn_and_record() -> str:
        await gate.wait()
        recorded.append("server.json")
        return "state"

    task = asyncio.create_task(uncancelled(spawn_and_record()))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done()  # still waiting for the spawn to be recorded
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorded == ["server.json"]

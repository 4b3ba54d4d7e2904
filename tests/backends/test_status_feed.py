"""The console's reader of a ServerSession (StatusFeed): the session's events folded into one typed
status, the phase the session's own; what the feed passes through as it came."""

from __future__ import annotations

from backends.core.phase import Phase
from backends.logs.alarms import Alarm
from backends.server.events import AlarmCleared, AlarmRaised, ConfigChanged, LogBatch, NoteAdded, PidChanged, Stopped
from backends.server.session import ServerSession
from backends.server.startup import Progress
from backends.server.status import ServerStatus, StatusChanged, StatusFeed
from tests.backends.lifecycle_support import config


def feed_of(tmp_path) -> tuple[ServerSession, StatusFeed, list]:
    session = ServerSession(config(tmp_path))
    seen: list = []
    return session, StatusFeed(session, seen.append), seen


def test_log_lines_pass_through_the_rest_is_status(tmp_path, state_dir):
    session, feed, seen = feed_of(tmp_path)
    batch, changed = LogBatch(()), ConfigChanged({"window": 1024}, "window 2048 -> 1024")
    session._emit(batch)
    session._emit(changed)
    session._emit(NoteAdded("waiting for the lock"))
    assert seen[0] is batch
    assert isinstance(seen[1], StatusChanged) and seen[1].knobs is changed and seen[1].said is None
    assert isinstance(seen[2], StatusChanged) and seen[2].said == "waiting for the lock" and seen[2].knobs is None
    assert seen[2].status.phase == Phase.IDLE and seen[2].status.note == "waiting for the lock"


def test_a_stop_comes_to_rest_and_a_new_pid_forgets_it(tmp_path, state_dir):
    session, feed, seen = feed_of(tmp_path)
    session._emit(Stopped("stopped pid 42"))
    assert seen[-1].came_to == Phase.STOPPED and seen[-1].said == "stopped pid 42"
    assert feed.status.phase == Phase.STOPPED and feed.status.detail == "stopped pid 42" and not feed.running
    session._emit(PidChanged(43, None, "another ddtune (pid 7)"))
    assert seen[-1].said == "pid 43 launched by another ddtune (pid 7)" and seen[-1].came_to is None
    assert feed.stopped is None and feed.status.phase == Phase.IDLE


def test_the_phase_is_the_sessions_progress_and_ready_waits_for_the_settle(tmp_path, state_dir):
    session, feed, _ = feed_of(tmp_path)
    session.progress = Progress(Phase.LOADING, "shard 3/8 target", 12.0, 4.0, 30.0, 99)
    status = feed.status
    assert (status.phase, status.pid, status.fraction, status.eta_s) == (Phase.LOADING, 99, 3 / 8, 30.0)
    session.progress = Progress(Phase.READY, "", 40.0, 0.0, 0.0, 99)
    assert feed.status.phase == Phase.WARMUP and feed.status.detail == "ready; verifying the knobs"


def test_an_alarm_shows_while_ready_only_and_clears(tmp_path, state_dir):
    session, feed, seen = feed_of(tmp_path)
    session._emit(AlarmRaised(Alarm("acceptance_collapse", "acceptance 1.0 for 20 s", None, 1.0)))
    assert seen[-1].said == "ALARM acceptance_collapse: acceptance 1.0 for 20 s"
    assert feed.alarm == "acceptance 1.0 for 20 s" and feed.status.alarm is None  # not ready: no alarm shown
    session._emit(AlarmCleared("acceptance_collapse"))
    assert feed.alarm is None


def test_the_clocks_tick_between_reports_and_stop_when_settled():
    base = ServerStatus("sim", "http://127.0.0.1:1", False, "sglang", phase=Phase.LOADING, started_s=10.4, at=100.0)
    assert base.elapsed_s(103.0) == 13.0
    failed = ServerStatus("sim", "", False, "sglang", phase=Phase.FAILED, started_s=10.4, at=100.0)
    assert failed.elapsed_s(200.0) == 10.0
    assert ServerStatus("sim", "", False, "sglang", phase=Phase.STOPPED, started_s=10.4).elapsed_s(200.0) is None
    ready = ServerStatus("sim", "", False, "sglang", phase=Phase.READY, ready_at=1000.0, detail="7/8")
    assert ready.uptime_s(1000.0 + 59) == 0.0 and ready.uptime_s(1000.0 + 130) == 120.0
    assert ready.fraction is None and base.uptime_s(5000.0) is None

"""Phases: the one mover of a session's startup tracker and the one place its phase is reported from."""

from backends.logs.events import ShardProgress, WeightLoadBegin
from backends.server.phases import Phases
from backends.server.startup import StartupTracker


def test_each_move_is_reported_once_and_a_log_line_names_the_session_s_pid():
    seen = []
    phases = Phases(StartupTracker(), seen.append)
    phases.stopping()
    phases.waiting("port 30000")
    phases.starting("pid 42 importing")  # reported by the wait for readiness, which names the pid
    phases.report(42, probing=True)
    phases.pid = 42
    phases.log_event(WeightLoadBegin(None))
    phases.log_event(WeightLoadBegin(None))  # the same phase and detail: nothing new to say
    phases.log_event(ShardProgress(1, 4, "Loading safetensors checkpoint shards"))
    assert [(p.phase, p.detail, p.pid) for p in seen] == [
        ("stopping-old", "", None), ("waiting-for-port-and-gpu", "port 30000", None),
        ("starting-process", "pid 42 importing", 42), ("loading-weights", "target weights", 42),
        ("loading-weights", "shard 1/4 target", 42)]
    assert phases.judging
    phases.ready(42)
    assert seen[-1].phase == "ready" and not phases.judging


def test_a_failure_ends_the_start_it_was_judging():
    seen = []
    phases = Phases(StartupTracker(), seen.append)
    phases.stopping()
    phases.failed("not ready after 60 s", 7)
    assert (seen[-1].phase, seen[-1].detail, seen[-1].pid) == ("failed", "not ready after 60 s", 7)
    assert not phases.judging


def test_headless_reports_a_log_line_s_move_when_the_wait_polls():
    """Headless, every report is a line on stderr: a log line moves the tracker, and the wait for
    readiness reports where it stands when it polls (a fast start prints no line per shard)."""
    seen = []
    phases = Phases(StartupTracker(), seen.append, every_line=False)
    phases.starting("pid 42 importing")
    phases.log_event(WeightLoadBegin(None))
    phases.log_event(ShardProgress(1, 4, "Loading safetensors checkpoint shards"))
    assert seen == [] and phases.tracker.detail == "shard 1/4 target"
    phases.report(42, probing=True)
    assert [(p.phase, p.detail, p.pid) for p in seen] == [("loading-weights", "shard 1/4 target", 42)]

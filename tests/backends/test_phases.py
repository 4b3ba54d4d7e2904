"""Phases: the one mover of a session's startup tracker and the one place its phase is reported from."""

from backends.logs.events import GraphCaptureBegin, GraphCaptureProgress, ShardProgress, WeightLoadBegin
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


def test_headless_reports_each_phase_at_once_and_its_details_when_the_wait_polls():
    """Headless, every report is a line on stderr: a line that begins a phase is reported at once (a
    start too fast for the wait's polls still shows every phase it passed; CI once missed
    loading-weights that way), and one that only moves the detail when the wait polls (a fast start
    prints no line per shard or graph size)."""
    seen = []
    phases = Phases(StartupTracker(), seen.append, every_line=False)
    phases.starting("pid 42 importing")
    phases.pid = 42
    phases.log_event(WeightLoadBegin(None))
    phases.log_event(ShardProgress(1, 4, "Loading safetensors checkpoint shards"))
    phases.log_event(ShardProgress(4, 4, "Loading safetensors checkpoint shards"))
    phases.log_event(GraphCaptureBegin("target verify", None))
    phases.log_event(GraphCaptureProgress(1, 8, 8, None))
    assert [(p.phase, p.detail, p.pid) for p in seen] == [
        ("loading-weights", "target weights", 42), ("capturing-graphs", "target verify", 42)]
    assert phases.tracker.detail == "target verify bs=8 (1/8)"
    phases.report(42, probing=True)
    assert (seen[-1].phase, seen[-1].detail) == ("capturing-graphs", "target verify bs=8 (1/8)")

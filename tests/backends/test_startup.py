"""StartupTracker (pure, time injected) and StartupHistory (startups.jsonl in the state dir)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from backends.logs.events import (
    Fatal, GraphCaptureBegin, GraphCaptureEnd, GraphCaptureProgress, ServerReady, ServerStarted,
    ShardProgress, WeightLoadBegin, WeightLoadEnd,
)
from backends.logs.parse import parse_line
from backends.logs.summary import read_log_lines
from backends.core.phase import Phase as P
from backends.server.startup import StartupHistory, StartupTracker

from tests.helpers import REPO

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


def run_start(tracker: StartupTracker, t0: float = 100.0) -> float:
    """Drive one full start with a fake clock; returns the end time."""
    t = t0
    tracker.begin_stop(t)
    t += 2
    tracker.begin_wait(t)
    t += 1
    for event in (WeightLoadBegin(100.0), ShardProgress(1, 2, "Multi-thread loading shards"),
                  ShardProgress(2, 2, "Multi-thread loading shards"), WeightLoadEnd(5.0, "T", 1.0, 1.0)):
        tracker.feed(event, t)
        t += 1
    t += 6
    tracker.feed(GraphCaptureBegin("target verify", 9.0), t)
    t += 10
    tracker.feed(ServerStarted(42), t)
    t += 3
    tracker.feed(ServerReady(), t)
    return t


def test_phases_in_order_with_durations():
    tracker = StartupTracker()
    assert tracker.phase == P.IDLE
    end = run_start(tracker)
    assert tracker.phase == P.READY
    assert [c.phase for c in tracker.changes] == [P.STOPPING, P.WAITING, P.LOADING, P.CAPTURING, P.WARMUP, P.READY]
    assert tracker.durations(end) == {P.STOPPING: 2.0, P.WAITING: 1.0, P.LOADING: 10.0, P.CAPTURING: 10.0,
                                      P.WARMUP: 3.0}
    assert tracker.elapsed(end) == 26.0


def test_detail_names_shard_and_model_then_graph_batch():
    tracker = StartupTracker()
    tracker.begin_wait(0.0)
    tracker.feed(ShardProgress(3, 8, "Multi-thread loading shards"), 1.0)
    assert (tracker.phase, tracker.detail) == (P.LOADING, "shard 3/8 target")
    tracker.feed(WeightLoadEnd(1.0, "T", 1.0, 1.0), 2.0)
    tracker.feed(ShardProgress(1, 1, "Loading safetensors checkpoint shards"), 3.0)
    assert tracker.detail == "shard 1/1 draft"
    tracker.feed(GraphCaptureBegin("draft verify", 1.0), 4.0)
    changed = tracker.feed(GraphCaptureProgress(2, 7, 32, 5.0), 5.0)
    assert changed and (tracker.phase, tracker.detail) == (P.CAPTURING, "draft verify bs=32 (2/7)")
    tracker.feed(GraphCaptureEnd("draft verify", 3.0, 1.0, 1.0), 6.0)
    assert tracker.detail == "draft verify done"


def test_backward_events_and_events_after_ready_are_ignored():
    tracker = StartupTracker()
    tracker.feed(GraphCaptureBegin("target verify", 1.0), 1.0)
    assert not tracker.feed(ShardProgress(1, 2, "x shards"), 2.0)
    assert tracker.phase == P.CAPTURING
    tracker.feed(ServerReady(), 3.0)
    assert not tracker.feed(Fatal("oom", "CUDA out of memory"), 4.0)
    assert tracker.phase == P.READY


def test_fatal_fails_but_generic_exception_does_not():
    tracker = StartupTracker()
    tracker.feed(WeightLoadBegin(1.0), 0.0)
    tracker.feed(Fatal("other", "ValueError: x", True), 1.0)
    assert tracker.phase == P.LOADING
    tracker.feed(Fatal("oom", "torch.OutOfMemoryError: CUDA out of memory."), 5.0)
    assert tracker.phase == P.FAILED
    assert tracker.error.startswith("oom: ")
    assert tracker.durations(9.0) == {P.LOADING: 5.0}
    tracker.fail("again", 10.0)
    assert tracker.error.startswith("oom: ")


def test_fail_from_lifecycle_and_restart_resets():
    tracker = StartupTracker()
    tracker.begin_wait(0.0)
    tracker.fail("port 30000 still held by pid 99", 30.0)
    assert tracker.phase == P.FAILED and tracker.detail.startswith("port 30000")
    tracker.begin_stop(40.0)
    assert tracker.phase == P.STOPPING and tracker.error is None and tracker.durations(41.0) == {P.STOPPING: 1.0}


def test_eta_from_expected_phase_times():
    expected = {P.STOPPING: 2.0, P.WAITING: 1.0, P.LOADING: 10.0, P.CAPTURING: 10.0, P.WARMUP: 3.0}
    tracker = StartupTracker(expected)
    assert tracker.eta_s(0.0) == 23.0  # idle: the work after stop/wait
    tracker.begin_wait(0.0)
    assert tracker.eta_s(0.5) == 23.5
    tracker.feed(WeightLoadBegin(1.0), 1.0)
    assert tracker.eta_s(5.0) == 6.0 + 10.0 + 3.0
    assert tracker.eta_s(30.0) == 13.0  # overdue phase counts as 0 left
    tracker.feed(ServerReady(), 31.0)
    assert tracker.eta_s(31.0) == 0.0
    assert StartupTracker().eta_s(0.0) is None


def test_tracker_follows_a_real_format_log():
    tracker = StartupTracker()
    clock = 0.0
    for line in read_log_lines(LOGS / "dflash_0523_tp2.log"):
        event = parse_line(line)
        if event is not None:
            clock = event.time_s or clock
            tracker.feed(event, clock)
    assert tracker.phase == P.READY
    # the server_args line, then 7 s of imports before the first weight line
    assert tracker.durations() == {P.STARTING_PROCESS: 7.0, P.LOADING: 9.0, P.CAPTURING: 20.0, P.WARMUP: 2.0}


def test_history_medians_per_model(state_dir):
    history = StartupHistory.default()
    assert history.path == state_dir / "startups.jsonl"
    assert history.medians("m") == {}
    for loading in (10.0, 30.0, 20.0):
        history.append("m", {P.LOADING: loading, P.CAPTURING: 5.0, "bogus": 1.0}, ok=True, at=1.0)
    history.append("m", {P.LOADING: 999.0}, ok=False, at=2.0)
    history.append("other", {P.LOADING: 1.0}, ok=True, at=3.0)
    with open(history.path, "a") as fh:
        fh.write("{torn line\n")
    assert history.medians("m") == {P.LOADING: 20.0, P.CAPTURING: 5.0}
    assert len(history.starts("m")) == 4
    first = json.loads(history.path.read_text().splitlines()[0])
    assert first == {"server": "m", "model": None, "at": 1.0, "ok": True, "phases": {P.LOADING: 10.0, P.CAPTURING: 5.0}}


def test_a_record_without_a_server_key_lends_no_eta(tmp_path):
    """Records from before the server key (model only) cannot say which server they timed."""
    history = StartupHistory(tmp_path / "startups.jsonl")
    history.path.write_text(json.dumps({"model": "demo", "at": 1.0, "ok": True, "phases": {P.LOADING: 4.0}}) + "\n")
    assert history.medians("demo") == {} and history.medians("sim:demo:0123") == {}


def test_history_keeps_the_latest_starts(tmp_path):
    history = StartupHistory(tmp_path / "sub" / "startups.jsonl")
    for i in range(StartupHistory.KEEP + 10):
        history.append("m", {P.WARMUP: 100.0 if i < 10 else 2.0}, ok=True, at=float(i))
    assert history.medians("m") == {P.WARMUP: 2.0}


def test_recorded_history_drives_the_next_eta(tmp_path):
    history = StartupHistory(tmp_path / "startups.jsonl")
    first = StartupTracker(history.medians("m"))
    end = run_start(first)
    history.append("m", first.durations(end), ok=True, at=end)
    second = StartupTracker(history.medians("m"))
    second.begin_stop(0.0)
    assert second.eta_s(0.0) == 26.0


REAL_LOGS = Path(__file__).resolve().parents[1] / "data" / "real" / "0.5.17" / "logs"


@pytest.mark.parametrize("name", ["dflash_restart_w1024.log", "dflash_w512_ddtune_up_load_console.log"])
def test_a_real_servers_imports_are_starting_process_not_weight_loading(name):
    # real SGLang 0.5.17 on an H200: server_args is printed ~25 s before "Load weight begin";
    # the weights then load in 0.13 s
    result = subprocess.run([sys.executable, "-m", "tui.cli", "inspect", "--json", str(REAL_LOGS / name)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    phases = json.loads(result.stdout)["phases"]
    assert phases["starting-process"] > 20 and phases["loading-weights"] < 5, phases


def test_the_new_process_starting_is_its_own_phase():
    tracker = StartupTracker()
    tracker.begin_stop(0.0)
    tracker.begin_wait(1.0, "port 30000")
    tracker.begin_start(2.0, "pid 7")
    assert tracker.phase == "starting-process"
    tracker.feed(parse_line("[2026-11-30 10:00:00] server_args=ServerArgs(model_path='m')"), 27.0)
    assert tracker.phase == "starting-process"
    tracker.feed(parse_line("[2026-11-30 10:00:25] Load weight begin. avail mem=139.00 GB"), 27.5)
    assert tracker.phase == "loading-weights"
    assert tracker.durations(28.0) == {"stopping-old": 1.0, "waiting-for-port-and-gpu": 1.0,
                                       "starting-process": 25.5, "loading-weights": 0.5}

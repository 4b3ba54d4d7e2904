"""Two lanes on one GPU (``--share-gpu``) as real processes on the simulator: allowed only when asked,
their servers start one after the other, every run is labelled shared-GPU (slot records, report),
each lane's GPU memory is its own process tree's, stopping one lane leaves the other running, and
nothing is left at the end."""

from __future__ import annotations

import json

import pytest

from backends.launch.process import group_members
from benchmarks.real_lanes import starts_in_turn
from tests.helpers import run_ddtune
from tests.workloads.test_sweep_lanes_sim import SMALL, alive, environ, lane_box, lane_states, records


@pytest.fixture
def box(tmp_path, state_dir):
    # a start that takes a second: two unordered starts on one GPU would overlap
    yield from lane_box(tmp_path, state_dir, ("--sim-step-ms", "0"))


def sweep(box, cfg, *args, timeout=240):
    return run_ddtune("--config", cfg, "sweep", *args, *SMALL, timeout=timeout, DDTUNE_STATE_DIR=str(box.state))


def test_two_lanes_share_gpu_0_start_in_turn_are_labelled_and_stop_apart(box):
    cfg = box.config("--sim-load-seconds", "1")
    out = box.tmp / "shared"
    r = sweep(box, cfg, "b8-t4-w2048", "b4-t4-w2048", "--parallel", "2", "--gpus", "0,0", "--share-gpu",
              "--keep-server", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "GPU 0 is shared by lanes 0, 1 (--share-gpu): their throughput interferes" in r.stderr
    assert "--mem-fraction-static" in r.stderr  # the config does not size the servers for one GPU
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    assert sorted(states) == [0, 1] and all(alive(s["pid"]) for s in states.values())
    assert {environ(s["pid"])["CUDA_VISIBLE_DEVICES"] for s in states.values()} == {"0"}
    assert states[0]["port"] != states[1]["port"]
    # one start at a time on the shared GPU: the later lane launched its server once the earlier one's was
    # ready (the sweep's own lines, in the order it lived them; each start here takes a second)
    assert starts_in_turn(r.stderr), r.stderr[-3000:]
    recs = records(out)
    assert sorted((x["server"]["lane"], x["server"]["shared_gpu"], x["server"]["gpu_shared_with"]) for x in recs) == [
        (0, True, [1]), (1, True, [0])]
    assert "lanes 0, 1 shared GPU 0 (--share-gpu): their runs interfered in throughput" in r.stdout
    lanes = r.stdout.split("## lanes", 1)[-1].split("\n## ", 1)[0]  # the lanes table (cells have a "shared" column)
    assert "| GPU use |" in lanes and lanes.count("| shared |") == 2, r.stdout
    again = run_ddtune("report", str(out), timeout=60, DDTUNE_STATE_DIR=str(box.state))  # the same, read back
    assert again.returncode == 0 and "## lanes" in again.stdout, again.stderr
    again_lanes = again.stdout.split("## lanes", 1)[-1].split("\n## ", 1)[0]
    assert "lanes 0, 1 shared GPU 0 (--share-gpu)" in again.stdout and again_lanes.count("| shared |") == 2
    assert json.loads((out / "sweep.json").read_text())["parallel"] == {
        "parallel": 2, "gpus": ["0", "0"], "gpus_per_server": 1, "share_gpu": True}
    lane1 = json.loads((box.state / "lanes" / "1" / "lane.json").read_text())
    assert lane1["gpus"] == ["0"] and lane1["shares_with"] == [0]

    # a sweep of one lane stops lane 1 and leaves lane 0's server (same knobs) running, untouched
    kept = run_ddtune("--config", cfg, "sweep", "b8-t4-w2048", *SMALL, "--parallel", "1", "--gpus", "0",
                      "--out", str(box.tmp / "one"), timeout=240, DDTUNE_STATE_DIR=str(box.state))
    assert kept.returncode == 0, kept.stderr[-3000:]
    assert group_members(states[1]["pgid"]) == []
    (again,) = records(box.tmp / "one")
    assert again["server"]["pid"] == states[0]["pid"] and again["server"]["restarted"] is False
    assert "shared_gpu" not in again["server"]  # lane 0 ran alone this time
    assert lane_states(box.state) == {} and not alive(states[0]["pid"])  # and it was stopped at the end


def test_shared_lanes_gpu_memory_is_each_lane_trees_own(box):
    from backends.machine.gpu import GpuSampler
    from backends.server.lane_gpu import lane_trees
    from backends.server.telemetry import TelemetryStream
    from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml
    from tui.adapters import gpu_view
    from tui.commands import gpu as gpu_cmd

    cfg = box.config()
    r = sweep(box, cfg, "b8-t4-w2048", "b4-t4-w2048", "--parallel", "2", "--share-gpu", "--gpus", "0",
              "--keep-server", "--out", str(box.tmp / "s"))
    assert r.returncode == 0, r.stderr[-3000:]  # --parallel 2 on one named GPU: both lanes on it
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    # NVML lists both lane servers' pids on GPU 0 (and a foreign process); each lane is its own tree's
    nv = make_fake_nvml([FakeGpu(procs=[(states[0]["pid"], 3 * GIB), (states[1]["pid"], 5 * GIB), (1, GIB)])])
    stream = TelemetryStream(gpu=GpuSampler(nvml=nv, holds_gpu=lambda pid: True), lanes=lane_trees)
    try:
        sample = stream.sample_blocking()
    finally:
        stream.close()
    shares = gpu_cmd.to_json(sample)["lane_servers"]
    assert [(s["lane"], s["pid"], s["device_indices"], s["used_bytes"]) for s in shares] == [
        ("lane 0 GPU 0", states[0]["pid"], [0], 3 * GIB), ("lane 1 GPU 0", states[1]["pid"], [0], 5 * GIB)]
    view = gpu_view(sample)
    assert [(row.index, row.lane_gib) for row in view.rows] == [(0, 8.0)]
    assert view.lanes == (f"lane 0 GPU 0 server pid {states[0]['pid']}: 3.0G on GPU 0",
                          f"lane 1 GPU 0 server pid {states[1]['pid']}: 5.0G on GPU 0")
    down = run_ddtune("--config", cfg, "down", timeout=120, DDTUNE_STATE_DIR=str(box.state))
    assert down.returncode == 0 and lane_states(box.state) == {}
    assert all(group_members(s["pgid"]) == [] for s in states.values())


@pytest.mark.parametrize("argv, words", [
    (["--gpus", "0,0"], "add --share-gpu"),
    (["--gpus", "0,0", "--share-gpu", "--gpus-per-server", "2"], "names a GPU twice"),
])
def test_a_shared_gpu_only_when_asked(box, argv, words):
    r = sweep(box, box.config(), "b8-t4-w2048", "--parallel", "2", *argv, "--out", str(box.tmp / "s"), timeout=60)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert not (box.tmp / "s" / "sweep.json").exists() and lane_states(box.state) == {}


def test_a_pinned_nccl_port_is_refused_for_lanes(box):
    r = sweep(box, box.config("--nccl-port", "29500"), "b8-t4-w2048", "--parallel", "2", "--gpus", "0,1",
              "--out", str(box.tmp / "s"), timeout=60)
    assert r.returncode == 2 and "pin --nccl-port 29500" in r.stderr, r.stderr
    assert lane_states(box.state) == {}

"""ddtune search --parallel as real processes on the simulator: two lanes find the serial search's best
(the performance model's), each measurement names its lane and GPU, a re-measured configuration moves to
the other GPU, Ctrl-C leaves no lane server running and the search resumes on its lanes, --keep-server
leaves lane servers that `down` finds, and bad lane options start nothing."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from backends.launch.process import group_members
from backends.sim import model
from tests.helpers import run_ddtune
from tests.workloads.test_sweep_lanes_sim import alive, lane_box, lane_states, start, wait_for

# the model's best is 18% ahead of the next at this cell: a short search sees it on any lane
SPACE = "budget=2,8 topk=1,8"
TARGET = ("--target-context", "60", "--target-concurrency", "2", "--max-tokens", "64", "--warmup", "0")
FAST = ("--target-context", "60", "--target-concurrency", "2", "--max-tokens", "16", "--warmup", "0",
        "--waves", "2")


@pytest.fixture
def box(tmp_path, state_dir):
    """Lane servers paced by the simulator's model (no --sim-step-ms), seeded."""
    yield from lane_box(tmp_path, state_dir, ("--sim-seed", "11"))


def search(box, *args, timeout=300):
    return run_ddtune(*args, timeout=timeout, DDTUNE_STATE_DIR=str(box.state))


def rounds(out) -> list[dict]:
    return [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines() if line.strip()]


def slot_records(out) -> list[dict]:
    files = [d / "slots.jsonl" for d in sorted(out.glob("round-*")) if (d / "slots.jsonl").is_file()]
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def test_two_lanes_find_the_serial_best_and_leave_nothing_running(box):
    _, best = model.space_ranking(60, 2, {"budget": (2, 8), "topk": (1, 8), "window": (1024,)})[0]
    best = {"budget": best["budget"], "topk": best["topk"]}
    cfg = box.config()
    serial = search(box, "--config", cfg, "search", "--space", SPACE, *TARGET, "--json", "--out", str(box.tmp / "s"))
    assert serial.returncode == 0, serial.stderr[-3000:]
    out = box.tmp / "p"
    r = search(box, "--config", cfg, "search", "--space", SPACE, *TARGET, "--waves", "2", "--json",
               "--parallel", "2", "--gpus", "3,5", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    assert summary["best"]["knobs"] == json.loads(serial.stdout)["best"]["knobs"] == best, r.stderr
    assert "search: lane 0: GPU 3, port" in r.stderr and "search: lane 1: GPU 5, port" in r.stderr
    assert summary["lanes"] == 2 and summary["wall_s"] > 0
    records = slot_records(out)
    box.seen.update(x["server"]["pid"] for x in records if x["server"].get("pid"))
    # restarts are summed over lanes: every one counted is one a lane's sweep engine made
    assert summary["restarts"]["used"] == sum(bool(x["server"].get("restarted")) for x in records)
    # each measurement names its lane and GPU, in rounds.jsonl and the summary
    lanes_of: dict[tuple, dict[int, int]] = {}
    remeasured = 0
    for record in rounds(out):
        for obs in record["observations"]:
            assert obs["gpus"] == [{0: "3", 1: "5"}[obs["lane"]]]
            before = lanes_of.setdefault(tuple(obs["point"]), {})
            if len(before) == 1:  # measured on one lane so far: the re-measure moves to the other
                remeasured += 1
                assert obs["lane"] not in before, record
            before[obs["lane"]] = before.get(obs["lane"], 0) + len(obs["samples"])
    assert remeasured, "no round re-measured a configuration"
    best_lanes = {p["lane"]: p["waves"] for p in summary["best"]["lanes"]}
    assert best_lanes == lanes_of[tuple(summary["best"]["knobs"][k] for k in ("budget", "topk"))]
    for x in records:
        run = json.loads((Path(x["bench_dir"]) / "run.json").read_text())
        assert run["server"]["server_info"]["sim_cuda_visible_devices"] == {0: "3", 1: "5"}[x["server"]["lane"]]
    assert lane_states(box.state) == {}  # every lane server stopped, its record cleared
    assert not any(alive(x["server"]["pid"]) for x in records if x["server"].get("pid"))
    assert json.loads((out / "search.json").read_text())["parallel"] == {"parallel": 2, "gpus": ["3", "5"],
                                                                       "gpus_per_server": 1}


def test_ctrl_c_mid_search_stops_every_lane_server_and_the_search_resumes_on_its_lanes(box):
    cfg = box.config()
    out = box.tmp / "search"
    # 6 waves a configuration: the search still measures when both lane servers are ready (the Ctrl-C
    # lands mid-round), and the resumed search that measures it all again stays short
    args = ("--config", cfg, "search", "--space", SPACE, *TARGET, "--waves", "6", "--rungs", "1")
    proc = start(box, *args, "--parallel", "2", "--gpus", "0,1", "--out", str(out))

    def both_ready() -> bool:
        states = lane_states(box.state)
        return len(states) == 2 and all(s.get("phase") == "ready" for s in states.values())

    wait_for("two ready lane servers", both_ready, proc)
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert f"ddtune search --resume --out {out}" in err
    for s in states.values():
        assert group_members(s["pgid"]) == [], f"lane server group {s['pgid']} still runs"
    assert lane_states(box.state) == {}
    assert json.loads((out / "search.json").read_text())["status"] == "interrupted"
    r = search(box, "--config", cfg, "search", "--resume", "--out", str(out), "--json")  # its own lanes
    assert r.returncode == 0, r.stderr[-3000:]
    assert "search: lane 1: GPU 1" in r.stderr
    summary = json.loads(r.stdout)
    assert summary["status"] == "done" and summary["best"] is not None and summary["lanes"] == 2
    records = slot_records(out)
    box.seen.update(x["server"]["pid"] for x in records if x["server"].get("pid"))
    assert all(x["server"]["lane"] in (0, 1) for x in records)
    assert lane_states(box.state) == {}


def test_keep_server_leaves_lane_servers_that_down_finds(box):
    cfg = box.config("--sim-step-ms", "0")
    r = search(box, "--config", cfg, "search", "--space", "budget=4,8 topk=2,4", *FAST, "--parallel", "2",
               "--gpus", "0,1", "--keep-server", "--out", str(box.tmp / "k"))
    assert r.returncode == 0, r.stderr[-3000:]
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    assert sorted(states) == [0, 1] and all(alive(s["pid"]) for s in states.values())
    assert "search: lane 0: server kept running (--keep-server)" in r.stderr
    down = search(box, "--config", cfg, "down", timeout=120)
    assert down.returncode == 0, down.stderr
    for index, s in states.items():
        assert f"lane {index}: stopped pid {s['pid']}" in down.stderr
        assert group_members(s["pgid"]) == []
    assert lane_states(box.state) == {}


@pytest.mark.parametrize("argv, words", [
    (["--parallel", "2", "--gpus", "0,0"], "GPU 0 is named twice"),
    (["--parallel", "2", "--gpus", "0,x"], "'x' is not a GPU index"),
    (["--gpus", "0", "--gpus-per-server", "2"], "only 1 GPU(s) to share"),
    (["--parallel", "0", "--gpus", "0"], "--parallel"),
])
def test_bad_lane_options_exit_2_and_start_nothing(box, argv, words):
    out = box.tmp / "s"
    r = search(box, "--config", box.config(), "search", "--space", SPACE, *FAST, *argv, "--out", str(out), timeout=60)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert not (out / "search.json").exists() and lane_states(box.state) == {}
    assert not (box.state / "lanes").exists() or not list((box.state / "lanes").glob("*/lane.json"))


def test_a_bad_space_is_refused_before_lanes_and_a_serial_search_resumes_serially(box):
    cfg = box.config("--sim-step-ms", "0")
    r = search(box, "--config", cfg, "search", "--space", "budget=4,8 bugdet=2", "--parallel", "2", "--gpus", "0,1",
               timeout=60)
    assert r.returncode == 2 and "--space: unknown knob 'bugdet'" in r.stderr, r.stderr
    out = box.tmp / "serial"
    r = search(box, "--config", cfg, "search", "--space", "budget=4,8", *FAST, "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    r = search(box, "--config", cfg, "search", "--resume", "--out", str(out), "--parallel", "2", "--gpus", "0,1",
               timeout=60)
    assert r.returncode == 2 and "ran on one server" in r.stderr, r.stderr

"""ddtune sweep --parallel as real processes on the simulator: lanes side by side, each server on its own
CUDA_VISIBLE_DEVICES and port, Ctrl-C leaving nothing running, resume per lane, --keep-server then
`down` finding every lane server, and `ddtune gpu` naming each lane's server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from backends.launch.process import group_members
from tests.helpers import REPO, ddtune_cmd, ddtune_env, free_port_run, run_ddtune

SMALL = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "2", "--max-tokens", "32",
         "--warmup", "0", "--no-eval")


def lane_box(tmp_path: Path, state_dir: Path, sim_args: tuple[str, ...]):
    """A simulator config on a free base port (below the ephemeral range: tests/helpers.py); every
    lane server a test leaves is killed at the end, and the test fails if one had to be. The search
    lane tests use it too, with their own simulator flags."""

    def write(*extra_args):
        path = tmp_path / f"ddtune{len(extra_args)}.toml"
        args = ", ".join(json.dumps(a) for a in ("--sim-load-seconds", "0.05", *sim_args, *extra_args))
        path.write_text(f'[server]\nbackend = "sim"\nport = {free_port_run(4)}\nextra_args = [{args}]\n'
                        f'ready_timeout_s = 120\nstop_timeout_s = 10\n')
        return str(path)

    procs: list[subprocess.Popen] = []
    seen: set[int] = set()
    box = type("Box", (), {"config": staticmethod(write), "state": state_dir, "procs": procs, "tmp": tmp_path,
                           "seen": seen})
    try:
        yield box
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(30)
        left = []
        for pgid in seen | {s["pgid"] for s in lane_states(state_dir).values() if s.get("pgid")}:
            if group_members(pgid):
                left.append(pgid)
                os.killpg(pgid, signal.SIGKILL)
        assert not left, f"lane server groups left running: {left}"


@pytest.fixture
def box(tmp_path, state_dir):
    yield from lane_box(tmp_path, state_dir, ("--sim-step-ms", "0"))


def lane_states(state: Path) -> dict[int, dict]:
    out = {}
    for path in sorted((state / "lanes").glob("*/server.json")):
        try:
            out[int(path.parent.name)] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return out


def records(out: Path) -> list[dict]:
    path = out / "slots.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def alive(pid: int) -> bool:
    """Running, not a zombie (a server orphaned by a killed sweep is reaped by whoever adopted it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def start(box, *args) -> subprocess.Popen:
    proc = subprocess.Popen(ddtune_cmd(*args), cwd=REPO, env=ddtune_env(DDTUNE_STATE_DIR=str(box.state)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    box.procs.append(proc)
    return proc


def wait_for(what, check, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        assert proc.poll() is None, f"ddtune exited waiting for {what}: {proc.stderr.read()[-3000:]}"
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout}s")


def test_two_lanes_each_on_its_own_gpu_rotate_the_repeats(box):
    cfg = box.config()
    out = box.tmp / "sweep"
    r = run_ddtune("--config", cfg, "sweep", "b8-t4-w2048", "b4-t4-w2048", "--repeats", "2", "--parallel", "2",
                   "--gpus", "3,5", *SMALL, "--out", str(out), timeout=240, DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sweep: lane 0: GPU 3, port" in r.stderr and "sweep: lane 1: GPU 5, port" in r.stderr
    recs = records(out)
    assert sorted(x["slot"]["index"] for x in recs) == [0, 1, 2, 3]
    for x in recs:
        server = x["server"]
        run = json.loads((out / x["slot"]["key"] / "bench" / "run.json").read_text())
        # the server the slot measured saw exactly its lane's GPUs, and ran on its lane's port
        assert run["server"]["server_info"]["sim_cuda_visible_devices"] == {0: "3", 1: "5"}[server["lane"]]
        assert server["gpus"] == [{0: "3", 1: "5"}[server["lane"]]] and f":{server['port']}" in run["server"]["url"]
    placed = {(x["slot"]["config"], x["server"]["gpus"][0]) for x in recs}
    assert placed == {(c, g) for c in ("b8-t4-w2048", "b4-t4-w2048") for g in ("3", "5")}  # each config on each GPU
    first = {x["server"]["lane"]: x for x in sorted(recs, key=lambda x: x["started_at"], reverse=True)}
    assert first[0]["started_at"] < first[1]["finished_at"] and first[1]["started_at"] < first[0]["finished_at"]
    assert len({x["server"]["pid"] for x in recs}) == 4
    box.seen.update(x["server"]["pid"] for x in recs)
    assert "## lanes" in r.stdout and "| b8-t4-w2048 | 1 | 0 | 3 |" in r.stdout
    again = run_ddtune("report", str(out), timeout=60, DDTUNE_STATE_DIR=str(box.state))  # read back: the same lanes
    assert again.returncode == 0 and "| b8-t4-w2048 | 1 | 0 | 3 |" in again.stdout, again.stderr
    lane = json.loads((box.state / "lanes" / "1" / "lane.json").read_text())
    assert lane["gpus"] == ["5"] and lane["sweep"] == str(out)
    assert lane_states(box.state) == {}  # every lane server stopped, its record cleared
    assert not any(alive(x["server"]["pid"]) for x in recs)
    assert json.loads((out / "sweep.json").read_text())["parallel"] == {"parallel": 2, "gpus": ["3", "5"],
                                                                      "gpus_per_server": 1}


@pytest.mark.parametrize("when", ["ready", "starting"])
def test_ctrl_c_mid_sweep_stops_every_lane_server(box, when):
    # "starting": Ctrl-C while both lanes' first servers still load (cut short inside their first start)
    cfg = box.config(*(("--sim-load-seconds", "30") if when == "starting" else ()))
    out = box.tmp / "sweep"
    proc = start(box, "--config", cfg, "sweep", "b8-t4-w2048", "b4-t4-w2048", "b16-t4-w2048", "--parallel", "2",
                 "--gpus", "0,1", "--contexts", "60", "--concurrency", "1", "--requests-per-cell", "400",
                 "--max-tokens", "64", "--warmup", "0", "--no-eval", "--out", str(out))

    def both_there() -> bool:
        states = lane_states(box.state)
        return len(states) == 2 and all(s.get("phase") == when for s in states.values())

    wait_for(f"two {when} lane servers", both_there, proc)
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    assert {environ(s["pid"])["CUDA_VISIBLE_DEVICES"] for s in states.values()} == {"0", "1"}
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert f"--resume --out {out}" in err
    for s in states.values():
        assert group_members(s["pgid"]) == [], f"lane server group {s['pgid']} still runs"
    assert lane_states(box.state) == {}
    assert json.loads((out / "sweep.json").read_text())["status"] == "interrupted"


def test_a_killed_parallel_sweep_resumes_per_lane(box):
    cfg = box.config()
    out = box.tmp / "sweep"
    proc = start(box, "--config", cfg, "sweep", "b8-t4-w2048", "b4-t4-w2048", "--repeats", "2", "--parallel", "2",
                 "--gpus", "0,1", "--contexts", "60", "--concurrency", "1", "--requests-per-cell", "40",
                 "--max-tokens", "32", "--warmup", "0", "--no-eval", "--out", str(out))
    wait_for("a finished run", lambda: len(records(out)) >= 1, proc)
    proc.send_signal(signal.SIGKILL)  # no cleanup at all: the lane servers outlive it
    proc.wait(30)
    before = lane_states(box.state)
    box.seen.update(s["pgid"] for s in before.values())
    assert before and all(alive(s["pid"]) for s in before.values())
    done_before = {x["slot"]["index"] for x in records(out)}
    assert len(done_before) < 4
    r = run_ddtune("--config", cfg, "sweep", "--resume", "--out", str(out), timeout=240,
                   DDTUNE_STATE_DIR=str(box.state))  # no --parallel: the sweep's own lanes
    assert r.returncode == 0, r.stderr[-3000:]
    assert "already done (resuming)" in r.stderr and "sweep: lane 1: GPU 1" in r.stderr
    recs = records(out)
    assert sorted(x["slot"]["index"] for x in recs) == [0, 1, 2, 3]  # each run exactly once
    for x in recs:
        cells = (out / x["slot"]["key"] / "bench" / "cells.jsonl").read_text().splitlines()
        assert len(cells) == 1
    resumed = [x for x in recs if x["slot"]["index"] not in done_before]
    reattached = [x for x in resumed if not x["server"]["restarted"]]
    # a lane whose server still ran its next run's config took it back without a restart
    assert all(x["server"]["pid"] in {s["pid"] for s in before.values()} for x in reattached)
    box.seen.update(x["server"]["pid"] for x in recs)
    assert lane_states(box.state) == {}
    assert not any(alive(s["pid"]) for s in before.values())


def test_keep_server_then_up_and_down_find_every_lane_server(box):
    cfg = box.config()
    out = box.tmp / "sweep"
    r = run_ddtune("--config", cfg, "sweep", "b8-t4-w2048", "b4-t4-w2048", "--parallel", "2", "--gpus", "6,7",
                   *SMALL, "--keep-server", "--out", str(out), timeout=240, DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 0, r.stderr[-3000:]
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    assert sorted(states) == [0, 1] and all(alive(s["pid"]) for s in states.values())
    for index, s in states.items():
        env = environ(s["pid"])
        assert env["CUDA_VISIBLE_DEVICES"] == ("6", "7")[index] and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        assert isinstance(s["create_time"], float) and s["pgid"] == s["pid"]
        assert json.loads((box.state / "lanes" / str(index) / "lane.json").read_text())["gpus"] == [("6", "7")[index]]
    status = json.loads(run_ddtune("--config", cfg, "status", "--json", DDTUNE_STATE_DIR=str(box.state)).stdout)
    assert status["phase"] == "stopped" and [(x["lane"], x["pid"], x["gpus"], x["phase"]) for x in status["lanes"]] == [
        (0, states[0]["pid"], ["6"], "ready"), (1, states[1]["pid"], ["7"], "ready")]
    up = run_ddtune("--config", cfg, "up", timeout=120, DDTUNE_STATE_DIR=str(box.state))
    assert up.returncode == 1 and f"held by lane 0 server pid {states[0]['pid']}" in up.stderr, up.stderr
    assert "ddtune down" in up.stderr
    down = run_ddtune("--config", cfg, "down", timeout=120, DDTUNE_STATE_DIR=str(box.state))
    assert down.returncode == 0, down.stderr
    for index, s in states.items():
        assert f"lane {index}: stopped pid {s['pid']}" in down.stderr
        assert group_members(s["pgid"]) == []
    assert lane_states(box.state) == {}
    again = run_ddtune("--config", cfg, "down", timeout=60, DDTUNE_STATE_DIR=str(box.state))
    assert again.returncode == 0 and "nothing to stop" in again.stderr


def test_gpu_view_names_each_lane_server(box, monkeypatch):
    from backends.machine.gpu import GpuSampler
    from backends.server.lane_gpu import lane_trees
    from backends.server.telemetry import TelemetryStream
    from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml
    from tui.adapters import gpu_view
    from tui.commands import gpu as gpu_cmd

    cfg = box.config()
    r = run_ddtune("--config", cfg, "sweep", "b8-t4-w2048", "b4-t4-w2048", "--parallel", "2", "--gpus", "0,1",
                   *SMALL, "--keep-server", "--out", str(box.tmp / "sweep"), timeout=240,
                   DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 0, r.stderr[-3000:]
    states = lane_states(box.state)
    box.seen.update(s["pgid"] for s in states.values())
    trees = lane_trees()
    assert [(t.label, t.pid) for t in trees] == [("lane 0 GPU 0", states[0]["pid"]),
                                                 ("lane 1 GPU 1", states[1]["pid"])]
    # NVML (a fake here; the real one in docs/scale.md) lists each lane server's pid on its own GPU
    nv = make_fake_nvml([FakeGpu(procs=[(states[0]["pid"], 3 * GIB)]), FakeGpu(procs=[(states[1]["pid"], 5 * GIB)])])
    stream = TelemetryStream(gpu=GpuSampler(nvml=nv, holds_gpu=lambda pid: True), lanes=lane_trees)
    try:
        sample = stream.sample_blocking()
    finally:
        stream.close()
    text = gpu_cmd.render_text(sample)
    assert f"[lane 0 GPU 0 server pid {states[0]['pid']}]" in text
    assert f"lane 1 GPU 1 server pid {states[1]['pid']}: 5.0 GiB on GPU 1" in text
    shares = gpu_cmd.to_json(sample)["lane_servers"]
    assert [(s["pid"], s["device_indices"], s["used_bytes"]) for s in shares] == [
        (states[0]["pid"], [0], 3 * GIB), (states[1]["pid"], [1], 5 * GIB)]
    # the console's GPU panel attributes the same memory to each lane server
    view = gpu_view(sample)
    assert [(row.index, row.lane_gib) for row in view.rows] == [(0, 3.0), (1, 5.0)]
    assert view.lanes == (f"lane 0 GPU 0 server pid {states[0]['pid']}: 3.0G on GPU 0",
                          f"lane 1 GPU 1 server pid {states[1]['pid']}: 5.0G on GPU 1")
    down = run_ddtune("--config", cfg, "down", timeout=120, DDTUNE_STATE_DIR=str(box.state))
    assert down.returncode == 0 and lane_states(box.state) == {}


@pytest.mark.parametrize("argv, words", [
    (["--gpus", "0,0"], "GPU 0 is named twice"),
    (["--gpus", "0,x"], "'x' is not a GPU index"),
    (["--gpus", "0", "--gpus-per-server", "2"], "only 1 GPU(s) to share"),
    (["--parallel", "0", "--gpus", "0"], "--parallel"),
])
def test_bad_lane_options_exit_2_and_start_nothing(box, argv, words):
    r = run_ddtune("--config", box.config(), "sweep", "b8-t4-w2048", *SMALL, *argv, "--out", str(box.tmp / "s"),
                   timeout=60, DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert not (box.tmp / "s" / "sweep.json").exists() and lane_states(box.state) == {}


def test_tp_size_must_match_gpus_per_server_and_a_serial_sweep_resumes_serially(box):
    cfg = box.config("--tp-size", "2")
    r = run_ddtune("--config", cfg, "sweep", "b8-t4-w2048", *SMALL, "--parallel", "2", "--gpus", "0,1",
                   timeout=60, DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 2 and "--gpus-per-server 2" in r.stderr, r.stderr
    out = box.tmp / "serial"
    r = run_ddtune("--config", box.config(), "sweep", "b8-t4-w2048", *SMALL, "--out", str(out), timeout=120,
                   DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_ddtune("--config", box.config(), "sweep", "--resume", "--out", str(out), "--parallel", "2",
                   "--gpus", "0,1", timeout=60, DDTUNE_STATE_DIR=str(box.state))
    assert r.returncode == 2 and "ran on one server" in r.stderr, r.stderr


async def test_without_nvml_gpus_are_required(state_dir):
    from backends.knobs.config import ServerConfig
    from backends.core.errors import UsageError
    from tests.fake_nvml import NVMLError_LibraryNotFound, make_fake_nvml
    from workloads.sweep.lanes import plan_lanes

    with pytest.raises(UsageError) as err:
        await plan_lanes(ServerConfig(), 2, None, nvml=make_fake_nvml(init_error=NVMLError_LibraryNotFound))
    assert "--parallel needs --gpus here" in err.value.message and "no NVIDIA driver" in err.value.message
    with pytest.raises(UsageError) as err:
        await plan_lanes(ServerConfig(backend="endpoint", url="http://127.0.0.1:1"), 2, ("0", "1"))
    assert "backend 'endpoint'" in err.value.message

"""ddtune sweep / ab as real processes against the simulator backend through the lifecycle layer:
restarts per config, kill and resume, a failing configuration, and the server left as the sweep found it."""

import json
import signal
import subprocess
import time

import pytest

from tests.helpers import REPO, ddtune_cmd, ddtune_env, run_ddtune
from tests.workloads.cli_box import cli_box, server_alive

SMALL = ("--contexts", "60", "--concurrency", "1", "2", "--requests-per-cell", "2", "--max-tokens", "32",
         "--warmup", "0", "--no-eval")


@pytest.fixture
def box(tmp_path, state_dir):
    yield from cli_box(tmp_path, state_dir)


def sweep(box, *args, timeout=240):
    return run_ddtune(*args, timeout=timeout, DDTUNE_STATE_DIR=str(box.state))


def records(out):
    return [json.loads(line) for line in (out / "slots.jsonl").read_text().splitlines() if line.strip()]


def test_three_presets_and_baseline_restart_four_times_and_report_names_the_best(box):
    # The simulator's seeded performance model paces the steps (no --sim-step-ms). b8-t4-w2048 leads
    # b4-t4-w2048 at one stream and b16-t4-w2048 at eight (python -m backends.sim.model), so over
    # both cells it wins by about 10%, well clear of the acceptance sampling noise.
    cfg = box.config()
    out = box.tmp / "sweep"
    r = sweep(box, "--config", cfg, "sweep", "b8-t4-w2048", "b16-t4-w2048", "b4-t4-w2048", "--baseline",
              "--contexts", "60", "--concurrency", "1", "8", "--max-tokens", "96",
              "--warmup", "0", "--no-eval", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("restarting the server") == 4
    recs = records(out)
    assert [x["slot"]["config"] for x in recs] == ["baseline", "b8-t4-w2048", "b16-t4-w2048", "b4-t4-w2048"]
    assert all(x["status"] == "done" and x["server"]["restarted"] for x in recs)
    assert "--speculative-algorithm" not in recs[0]["server"]["launch_command"]
    assert "--speculative-ddtree-budget 16" in recs[2]["server"]["launch_command"]
    assert not server_alive(box.state)  # stopped at the end
    rep = run_ddtune("report", str(out), "--format", "json")
    doc = json.loads(rep.stdout)
    assert doc["best_overall"]["config"] == "b8-t4-w2048" and doc["best_overall"]["margin"]["value"] > 1.0
    assert doc["restarts"]["count"] == 4 and doc["reference_is_baseline"]
    md = run_ddtune("report", str(out))
    assert "**Best overall: b8-t4-w2048**, ahead of " in md.stdout


def wait_for_records(out, n, proc, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / "slots.jsonl").is_file() and len(records(out)) >= n:
            return
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.05)
    raise AssertionError(f"no {n} finished slot(s) within {timeout}s")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_sweep_resumes_where_it_stopped(box, sig):
    cfg = box.config("--sim-step-ms", "0")
    out = box.tmp / "sweep"
    proc = subprocess.Popen(ddtune_cmd("--config", cfg, "sweep", "b8-t4-w2048", "b4-t4-w2048", "--repeats", "2",
                                       *SMALL, "--out", str(out)),
                            cwd=REPO, env=ddtune_env(DDTUNE_STATE_DIR=str(box.state)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    box.procs.append(proc)
    wait_for_records(out, 1, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and "--resume --out" in err
        assert json.loads((out / "sweep.json").read_text())["status"] == "interrupted"
        assert not server_alive(box.state)  # an orderly stop stops the server
    done_before = {x["slot"]["index"] for x in records(out)}
    assert 0 in done_before and len(done_before) < 4
    r = sweep(box, "--config", cfg, "sweep", "--resume", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    recs = records(out)
    assert sorted(x["slot"]["index"] for x in recs) == [0, 1, 2, 3]  # each slot exactly once
    assert "[1/4]" not in r.stderr and "already done (resuming)" in r.stderr
    assert [x["slot"]["config"] for x in sorted(recs, key=lambda x: x["slot"]["index"])] == \
        ["b8-t4-w2048", "b4-t4-w2048", "b4-t4-w2048", "b8-t4-w2048"]
    for x in recs:
        cells = (out / x["slot"]["key"] / "bench" / "cells.jsonl").read_text().splitlines()
        assert len(cells) == 2  # complete, no duplicate cells
    assert json.loads((out / "sweep.json").read_text())["status"] == "done"
    assert not server_alive(box.state)


def test_failing_configuration_is_recorded_and_the_rest_runs(box):
    cfg = box.config("--sim-step-ms", "0")
    bad = box.tmp / "tiny-window.toml"
    bad.write_text("[knobs]\nbudget = 8\ntopk = 4\nwindow = 8\n")  # below the block size: SGLang refuses it
    out = box.tmp / "sweep"
    r = sweep(box, "--config", cfg, "sweep", "b8-t4-w2048", str(bad), "b4-t4-w2048", *SMALL, "--out", str(out))
    assert r.returncode == 1, r.stderr[-3000:]
    recs = records(out)
    assert [(x["slot"]["config"], x["status"]) for x in recs] == [
        ("b8-t4-w2048", "done"), ("tiny-window", "failed"), ("b4-t4-w2048", "done")]
    assert "smaller than the block size" in recs[1]["reason"]
    assert "## failed configurations" in r.stdout and "tiny-window (run 1)" in r.stdout
    assert not server_alive(box.state)


def test_ab_interleaves_and_restarts_only_when_knobs_change(box):
    cfg = box.config("--sim-step-ms", "0")
    out = box.tmp / "ab"
    r = sweep(box, "--config", cfg, "ab", "b8-t4-w2048", "b8-t4-nowindow", "--rounds", "2", "--contexts", "60",
              "--concurrency", "1", "--requests-per-cell", "2", "--max-tokens", "32", "--warmup", "0",
              "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("restarting the server") == 3 and r.stderr.count("server already runs it") == 1
    doc = json.loads(r.stdout)
    assert doc["sweep"] == str(out)
    rows = {c["config"]: c for c in doc["report"]["cells"]}
    assert rows["b8-t4-w2048"]["runs"] == 2 and rows["b8-t4-nowindow"]["vs_reference"] is not None
    assert not server_alive(box.state)


def test_usage_errors(box):
    cfg = box.config()
    r = sweep(box, "--config", cfg, "sweep")
    assert r.returncode == 2 and "name the presets" in r.stderr
    r = sweep(box, "--config", cfg, "sweep", "no-such-preset", "--no-eval")
    assert r.returncode == 2 and "no such preset" in r.stderr
    r = sweep(box, "--config", cfg, "sweep", "--resume", "--out", str(box.tmp / "none"))
    assert r.returncode == 2 and "no sweep.json" in r.stderr
    r = sweep(box, "--config", cfg, "ab", "b8-t4-w2048")
    assert r.returncode == 2 and "two presets" in r.stderr


def test_a_sweep_returns_the_server_to_the_config_it_ran_before(box):
    cfg = box.config("--sim-step-ms", "0")
    r = sweep(box, "--config", cfg, "up", "--set", "window=4096")
    assert r.returncode == 0, r.stderr[-3000:]
    r = sweep(box, "--config", cfg, "ab", "b8-t4-w2048", "b8-t4-nowindow", "--rounds", "1", "--contexts", "60",
              "--concurrency", "1", "--requests-per-cell", "1", "--max-tokens", "16", "--warmup", "0",
              "--out", str(box.tmp / "ab"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "returned the server to the config it ran before the sweep" in r.stderr and "window=4096" in r.stderr
    status = json.loads(sweep(box, "--config", cfg, "status", "--json").stdout)
    assert status["phase"] == "ready" and status["knobs"]["window"] == 4096
    assert status["effective"]["window_size"] == 4096 and server_alive(box.state)

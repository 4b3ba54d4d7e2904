"""ddtune search as a real process against the simulator backend: it finds the performance model's
best of a 27-configuration space with fewer restarts than the grid, a killed search resumes without
measuring again, and bad input changes nothing."""

import json
import os
import signal
import subprocess
import time

import pytest

from backends.sim import model
from tests.helpers import REPO, ddtune_cmd, ddtune_env, run_ddtune
from tests.workloads.cli_box import cli_box, server_alive

# budget and topk values far apart and windows around the target context: each knob's line has a
# clear winner in the model (26%, 14% and 13% ahead), so one short search always sees it
SPACE = {"budget": (2, 8, 32), "topk": (1, 2, 8), "window": (256, 1024, None)}
SPACE_TEXT = "budget=2,8,32 topk=1,2,8 window=256,1024,none"
TARGET = ("--target-context", "1536", "--target-concurrency", "4", "--max-tokens", "64", "--warmup", "0")


@pytest.fixture
def box(tmp_path, state_dir):
    yield from cli_box(tmp_path, state_dir)


def search(box, *args, timeout=300):
    return run_ddtune(*args, timeout=timeout, DDTUNE_STATE_DIR=str(box.state))


def slot_records(out):
    files = [d / "slots.jsonl" for d in sorted(out.glob("round-*")) if (d / "slots.jsonl").is_file()]
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def test_search_finds_the_models_best_with_fewer_restarts_than_the_grid(box):
    # the seeded performance model paces the steps (no --sim-step-ms): its best is known
    best_speed, best = model.space_ranking(1536, 4, SPACE)[0]
    assert best == {"budget": 8, "topk": 2, "window": None}
    out = box.tmp / "search"
    r = search(box, "--config", box.config("--sim-seed", "11"), "search", "--space", SPACE_TEXT, *TARGET,
               "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    assert summary["best"]["knobs"] == best, r.stderr
    assert summary["margin"]["value"] > 1.0 and summary["rival"]["knobs"] != best
    restarts = summary["restarts"]
    assert restarts["grid"] == 27 and 0 < restarts["used"] < 27 and restarts["used"] <= 12, r.stderr
    # every restart counted is one the sweep engine made and printed
    assert restarts["used"] == sum(bool(s["server"].get("restarted")) for s in slot_records(out))
    assert r.stderr.count("restarting the server") == restarts["used"]
    assert "round 1 · budget line through budget=8 topk=2 window=1024 · rung 1" in r.stderr
    assert json.loads((out / "summary.json").read_text()) == summary
    assert len((out / "rounds.jsonl").read_text().splitlines()) == summary["rounds"]
    assert json.loads((out / "search.json").read_text())["status"] == "done"
    assert not server_alive(box.state)  # stopped: none ran before the search
    # issue 32: `ddtune report` reads a search folder (it said "no such run"): its summary, then its rounds
    r = search(box, "report", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"# knob search {out}\n") and f"best: {summary['best']['label']}:" in r.stdout
    assert "# ddtune report" in r.stdout and f"| {summary['best']['label']} |" in r.stdout
    doc = json.loads(search(box, "report", str(out), "--json").stdout)
    assert doc["searches"][0]["summary"] == summary and doc["configs"]


def test_killed_search_resumes_without_measuring_again(box):
    cfg = box.config("--sim-step-ms", "0")
    out = box.tmp / "search"
    args = ("--config", cfg, "search", "--space", "budget=4,8 topk=2,4", "--target-context", "60",
            "--target-concurrency", "2", "--max-tokens", "16", "--waves", "2", "--warmup", "0", "--out", str(out))
    proc = subprocess.Popen(ddtune_cmd(*args), cwd=REPO, env=ddtune_env(DDTUNE_STATE_DIR=str(box.state)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    box.procs.append(proc)
    rounds = out / "rounds.jsonl"
    deadline = time.monotonic() + 120
    while not (rounds.is_file() and rounds.read_text().strip()):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no round finished within 120 s"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    recorded = rounds.read_text().splitlines()
    measured_before = len(slot_records(out))
    r = search(box, "--config", cfg, "search", "--resume", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"resuming: {len(recorded)} round(s) recorded" in r.stderr
    assert f"round {len(recorded) + 1} · " in r.stderr  # the search went on from there
    assert rounds.read_text().splitlines()[:len(recorded)] == recorded  # kept as written
    first = json.loads(recorded[0])
    round_one = [json.loads(line) for line in (out / "round-01" / "slots.jsonl").read_text().splitlines()]
    assert len(round_one) == len(first["plan"]["asks"])  # round 1 was not measured again
    assert len(slot_records(out)) >= measured_before
    summary = json.loads(r.stdout)
    assert summary["status"] == "done" and summary["best"] is not None
    manifest = json.loads((out / "search.json").read_text())
    assert manifest["status"] == "done" and len(manifest["attempts"]) == 2


def test_bad_space_is_refused_before_anything_runs(box):
    cfg = box.config()
    r = search(box, "--config", cfg, "search", "--space", "budget=4,8 bugdet=2")
    assert r.returncode == 2
    assert "--space: unknown knob 'bugdet'" in r.stderr and "hint: known knobs: budget, topk, window" in r.stderr
    r = search(box, "--config", cfg, "search", "--space", "budget=4,8", "--start", "budget=16")
    assert r.returncode == 2 and "--start 'budget=16' is not a configuration of the space" in r.stderr
    r = search(box, "--config", cfg, "search", "--space", "budget=8 window=none")
    assert r.returncode == 2 and "holds one configuration: nothing to search" in r.stderr
    r = search(box, "--config", cfg, "search", "--resume", "--space", "budget=4")
    assert r.returncode == 2 and "--resume continues a search with its own space" in r.stderr
    assert not (box.state / "runs").exists() or not list((box.state / "runs").iterdir())
    assert not server_alive(box.state)

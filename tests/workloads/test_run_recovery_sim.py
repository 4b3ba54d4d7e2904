"""Killed runs against the simulator: nothing lost, nothing counted twice, nothing left 'running'.

A bench killed mid-cell and resumed keeps the answers of both attempts in responses.jsonl (written as
they arrive), but regrading and the report see only those of the cells' kept attempts. A killed eval
reads 'interrupted' once any other run starts, and ``eval --resume`` asks only what is missing."""

import json
import os
import signal
import subprocess
import time

from tests.helpers import REPO, ddtune_cmd, ddtune_env, run_ddtune
from tests.workloads.sim_args import FAST, SPEC

FIVE = ("is_palindrome", "fib", "merge_sorted", "word_count", "gcd")


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def kill_when(proc, ready, timeout=120.0, sig=signal.SIGKILL):
    """Send ``sig`` (SIGKILL) to ``proc``'s process group as soon as ``ready()`` holds (the run is
    mid-way); what it then printed, (stdout, stderr)."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.02)
        os.killpg(proc.pid, sig)
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def start(*argv):
    return subprocess.Popen(ddtune_cmd(*argv), env=ddtune_env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_bench_killed_mid_cell_then_resumed_regrades_only_kept_cells(start_sim, state_dir):
    sim = start_sim(*SPEC, "--reasoning-parser", "qwen3", "--sim-step-ms", "20")  # slow enough to kill mid-cell
    proc = start("bench", "--url", sim.url, "--contexts", "60", "200", "400", "--concurrency", "1", "--coding",
                 "--max-tokens", "64", "--requests-per-cell", "3", "--warmup", "0")
    run_dir = []

    def mid_cell():
        found = list((state_dir / "runs").glob("*-bench"))
        if not found:
            return False
        run_dir[:] = found
        cells = lines(found[0] / "cells.jsonl")
        return bool(cells) and len(lines(found[0] / "responses.jsonl")) > sum(c["requests"] for c in cells)

    kill_when(proc, mid_cell)
    path = run_dir[0]
    before = lines(path / "cells.jsonl")
    assert 1 <= len(before) < 3
    assert json.loads((path / "run.json").read_text())["status"] == "running"  # nobody could say otherwise
    from workloads.report import list_runs

    assert [(r.path, r.status) for r in list_runs()] == [(path, "interrupted")]  # the console's runs list
    report = run_ddtune("report", str(path), "--format", "json")
    assert report.returncode == 0, report.stderr
    assert len(json.loads(report.stdout)["cells"]) == len(before)

    out = run_ddtune("bench", "--resume", str(path), "--url", sim.url, timeout=240)
    assert out.returncode == 0, out.stderr
    cells = lines(path / "cells.jsonl")
    assert sorted(c["context"] for c in cells) == [60, 200, 400]
    run = json.loads((path / "run.json").read_text())
    assert run["status"] == "done" and [a["id"] for a in run["attempts"]] == [1, 2]
    responses = lines(path / "responses.jsonl")
    measured = sum(c["requests"] for c in cells)
    assert len(responses) > measured  # the killed attempt's answers are still on disk
    assert {r["attempt"] for r in responses} == {1, 2}

    regraded = run_ddtune("eval", "--regrade", str(path / "responses.jsonl"), "--json", timeout=240)
    assert regraded.returncode == 0, regraded.stderr
    doc = json.loads(regraded.stdout)
    assert len(doc["results"]) == measured
    assert doc["skipped"]["not_kept"] == len(responses) - measured
    total = {}
    for c in cells:
        for k, v in c["verdicts"].items():
            total[k] = total.get(k, 0) + v
    assert doc["summary"] == total

    from workloads.report.inputs import read_bench_dir

    assert len(read_bench_dir(path).responses) == measured


def test_killed_eval_reads_interrupted_and_resume_finishes_each_problem_once(start_sim, state_dir):
    slow = start_sim(*SPEC, "--sim-step-ms", "25", "--sim-wrong-rate", "0")
    proc = start("eval", "--url", slow.url, "--problems", *FIVE, "--concurrency", "1", "--max-tokens", "2048")
    run_dir = []

    def one_graded():
        run_dir[:] = list((state_dir / "runs").glob("*-eval"))
        return bool(run_dir) and len(lines(run_dir[0] / "results.jsonl")) >= 1

    kill_when(proc, one_graded)
    path = run_dir[0]
    assert json.loads((path / "run.json").read_text())["status"] == "running"
    kept = [r["problem"] for r in lines(path / "results.jsonl")]
    assert 1 <= len(kept) < 5

    fast = start_sim(*SPEC, *FAST, "--sim-wrong-rate", "0")
    other = run_ddtune("bench", "--url", fast.url, "--contexts", "60", "--concurrency", "1", "--requests-per-cell", "1",
                       "--warmup", "0", "--max-tokens", "8", timeout=120)
    assert other.returncode == 0, other.stderr
    run = json.loads((path / "run.json").read_text())
    assert run["status"] == "interrupted" and f"pid {run['attempts'][0]['pid']}" in run["error"]

    out = run_ddtune("eval", "--resume", str(path), "--url", fast.url, "--json", timeout=180)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["run_dir"] == str(path)
    assert [r["problem"] for r in doc["results"]] == list(FIVE) and doc["summary"]["pass"] == 5
    results = lines(path / "results.jsonl")
    assert sorted(r["problem"] for r in results) == sorted(FIVE)  # each once
    assert [r["problem"] for r in results if r["attempt"] == 1] == kept
    run = json.loads((path / "run.json").read_text())
    assert run["status"] == "done" and len(run["attempts"]) == 2 and len(run["resumed_at"]) == 1
    regraded = json.loads(run_ddtune("eval", "--regrade", str(path / "responses.jsonl"), "--json",
                                     timeout=180).stdout)
    assert sorted(r["problem"] for r in regraded["results"]) == sorted(FIVE)
    again = run_ddtune("eval", "--resume", str(path), "--url", fast.url, "--json", timeout=60)
    assert again.returncode == 0 and len(lines(path / "results.jsonl")) == 5  # nothing left to ask


def test_bench_ctrl_c_prints_the_command_that_resumes_it(start_sim, state_dir):
    """Issue 32: sweep and search print their resume command on Ctrl-C; bench printed none."""
    sim = start_sim(*SPEC, "--sim-step-ms", "20")
    proc = start("bench", "--url", sim.url, "--contexts", "60", "--concurrency", "1", "--max-tokens", "64",
                 "--requests-per-cell", "20", "--warmup", "0")
    _, stderr = kill_when(proc, lambda: list((state_dir / "runs").glob("*-bench/responses.jsonl")), 60,
                          sig=signal.SIGINT)  # the run is under way: Ctrl-C
    [path] = (state_dir / "runs").glob("*-bench")
    assert proc.returncode == 130, stderr
    assert stderr.splitlines()[-1] == f"bench interrupted; continue it with: ddtune bench --resume {path}", stderr
    assert "Traceback" not in stderr
    assert json.loads((path / "run.json").read_text())["status"] == "interrupted"

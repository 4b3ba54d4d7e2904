"""Killed runs against the simulator: nothing lost, nothing counted twice, nothing left 'running'.

A killed eval reads 'interrupted' once any other run starts, and ``eval --resume`` asks only what is
missing."""

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


def kill_when(proc, ready, timeout=120.0):
    """SIGKILL ``proc``'s process group as soon as ``ready()`` holds (the run is mid-way)."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def start(*argv):
    return subprocess.Popen(ddtune_cmd(*argv), env=ddtune_env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


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
    again = run_ddtune("eval", "--resume", str(path), "--url", fast.url, "--json", timeout=60)
    assert again.returncode == 0 and len(lines(path / "results.jsonl")) == 5  # nothing left to ask

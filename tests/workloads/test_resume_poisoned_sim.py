"""--resume reads back what a run wrote (issue 28, item 6): a plan with an absurd number is one line
naming the run file; a cell or an eval result that holds one (1e400, a 400-digit count, NaN, an
unknown verdict) costs only itself: it is measured (or asked) again, with a note, and nothing absurd
reaches the output. A run file that is a FIFO is refused at once. Against the simulator."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import run_ddtune
from tests.unit.test_bad_input_cli import one_error
from tests.workloads.sim_args import FAST, SPEC

BENCH = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "2", "--max-tokens", "4", "--warmup", "0")


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_run(kind: str, argv: tuple[str, ...], url: str, state_dir: Path) -> Path:
    out = run_ddtune(kind, "--url", url, *argv, "--json", timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    found = sorted((state_dir / "runs").glob(f"*-{kind}"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture
def sim(start_sim):
    return start_sim(*SPEC, *FAST)


def test_bench_resume_measures_a_poisoned_cell_again_and_prints_only_finite_numbers(sim, state_dir):
    run = first_run("bench", BENCH, sim.url, state_dir)
    cells = run / "cells.jsonl"
    good = lines(cells)[0]
    cells.write_text(json.dumps({**good, "output_tok_s": float("inf"), "requests": 10**400}) + "\n")

    out = run_ddtune("bench", "--resume", str(run), "--url", sim.url, "--json", timeout=180)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert f"skipped 1 unusable record(s) of {cells} (" in out.stderr
    assert "those cells are measured again" in out.stderr
    doc = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the output"))
    assert [c["requests"] for c in doc["cells"]] == [2] and doc["cells"][0]["output_tok_s"] > 0


@pytest.mark.parametrize("plan, problem", [
    ({"concurrencies": [10**400]}, "concurrency: 1000"),
    ({"max_tokens": float("nan")}, "max_tokens: expected an integer, got NaN"),
    ({"max_tokens": 1e400}, "max_tokens: expected an integer, got Infinity"),
    ({"contexts": []}, "contexts: none"),
    ({"warmup": -1}, "warmup: -1 is not from 0 to"),
])
def test_bench_resume_of_an_absurd_plan_is_one_line_naming_the_run_file(sim, state_dir, plan, problem):
    run = first_run("bench", BENCH, sim.url, state_dir)
    doc = json.loads((run / "run.json").read_text())
    doc["plan"].update(plan)
    (run / "run.json").write_text(json.dumps(doc))
    before = (run / "run.json").read_text()
    out = run_ddtune("bench", "--resume", str(run), "--url", sim.url, timeout=120)
    one_error(out, f"{run / 'run.json'} plan: not a plan ddtune wrote", problem)
    assert (run / "run.json").read_text() == before


def test_eval_resume_asks_a_problem_whose_result_is_unusable_again(sim, state_dir):
    run = first_run("eval", ("--problems", "fib", "gcd", "--max-tokens", "512", "--concurrency", "2"), sim.url,
                    state_dir)
    results = run / "results.jsonl"
    kept = lines(results)
    kept[0]["verdict"] = "pass" * 100  # no verdict ddtune knows
    kept[1]["problem"] = 10**400
    results.write_text("".join(json.dumps(r) + "\n" for r in kept))
    doc = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**doc, "status": "interrupted"}))

    out = run_ddtune("eval", "--resume", str(run), "--url", sim.url, "--json", timeout=180)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert f"skipped 2 unusable record(s) of {results} (" in out.stderr and "asked again" in out.stderr
    graded = json.loads(out.stdout)
    assert sorted(r["problem"] for r in graded["results"]) == ["fib", "gcd"]
    assert set(graded["summary"]) == {"pass", "fail", "error", "timeout", "no_code", "truncated"}


def test_eval_resume_of_a_plan_with_a_huge_concurrency_is_refused(sim, state_dir):
    run = first_run("eval", ("--problems", "fib", "--max-tokens", "64"), sim.url, state_dir)
    doc = json.loads((run / "run.json").read_text())
    doc["plan"]["concurrency"] = 10**18  # range(10**18) workers: never started
    (run / "run.json").write_text(json.dumps(doc))
    out = run_ddtune("eval", "--resume", str(run), "--url", sim.url, timeout=120)
    one_error(out, f"--resume: {run / 'run.json'} plan: not a plan ddtune wrote", "concurrency: 1000000000000000000")


def test_a_results_file_that_is_a_fifo_is_refused_at_once(sim, state_dir):
    run = first_run("eval", ("--problems", "fib", "--max-tokens", "64"), sim.url, state_dir)
    (run / "results.jsonl").unlink()
    os.mkfifo(run / "results.jsonl")
    writer = os.open(run / "results.jsonl", os.O_RDWR | os.O_NONBLOCK)  # held open, never written
    try:
        out = run_ddtune("eval", "--resume", str(run), "--url", sim.url, timeout=60)
    finally:
        os.close(writer)
    one_error(out, str(run / "results.jsonl"), "is a FIFO (named pipe), not a regular file")

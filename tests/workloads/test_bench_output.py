"""The bench's terminal output: the progress bar and the final table (pure formatting)."""

import io

from tui.commands.bench import ProgressBar, format_table
from workloads.bench.cells import cell_stats
from workloads.bench.matrix import BenchEta, BenchProgress
from workloads.bench.plan import BenchPlan
from workloads.client.result import RequestResult
from workloads.grading.evaluate import Grade


class Tty(io.StringIO):
    def isatty(self):
        return True


def result(tokens=100, verify=25, ok=True):
    return RequestResult(ok=ok, error=None if ok else "boom", endpoint="chat", started_at=0.0, ttft_s=0.05,
                         itl_s=(0.01, 0.02, 0.03), e2e_s=1.05, output_tokens=tokens, prompt_tokens=1024,
                         finish_reason="stop", spec_verify_ct=verify, spec_accept_length=None, content="",
                         reasoning_content=None, chunks=4)


def test_progress_bar_redraws_in_place_on_a_terminal():
    out = Tty()
    bar = ProgressBar(out, width=10)
    bar.update(BenchProgress(1, 4, 1024, 8, 8, 16, "running"))
    bar.close()
    text = out.getvalue()
    assert text.startswith("\r[###-------]") and "37.5%" in text and "cell 2/4" in text and text.endswith("\n")


def test_progress_without_a_terminal_prints_one_line_per_cell_with_its_eta():
    out = io.StringIO()
    bar = ProgressBar(out)
    bar.update(BenchProgress(0, 3, 60, 1, 3, 8, "running", None))
    bar.update(BenchProgress(0, 3, 60, 1, 8, 8, "done", 40.0))
    bar.update(BenchProgress(1, 3, 60, 8, 16, 16, "done", 300.0))
    bar.update(BenchProgress(2, 3, 1024, 1, 8, 8, "done", 0.0))
    assert out.getvalue().splitlines() == [
        "cell 1/3 done: context 60, concurrency 1, 8 requests; ETA 40 s",  # progress of an older caller: no prompts
        "cell 2/3 done: context 60, concurrency 8, 16 requests; ETA 5.0 min",
        "cell 3/3 done: context 1024, concurrency 1, 8 requests",
    ]


def test_progress_bar_shows_the_eta_once_measured():
    out = Tty()
    bar = ProgressBar(out, width=10)
    bar.update(BenchProgress(0, 4, 60, 1, 2, 8, "running", None))
    assert "ETA" not in out.getvalue()
    bar.update(BenchProgress(1, 4, 60, 8, 4, 16, "running", 95.0))
    assert out.getvalue().rstrip().endswith("running 4/16  ETA 95 s")


def test_bench_eta_comes_from_measured_rounds():
    plan = BenchPlan((60, 1024), (1, 8))  # rounds per cell: c1 8/1 = 8, c8 16/8 = 2
    eta = BenchEta(plan)
    assert eta.eta([(60, 8), (1024, 1), (1024, 8)]) is None  # nothing measured yet: no guess
    eta.cell_finished(1, 16.0)                                # 8 rounds in 16 s: 2 s a round
    assert eta.eta([(60, 8), (1024, 1), (1024, 8)]) == 2 * (2 + 8 + 2)
    assert eta.eta([(1024, 8)], current=(1, 0.5)) == 2 * (2 + 4)  # half of a c1 cell left, then one c8
    assert eta.eta([]) == 0.0


def test_cell_stats_and_table():
    results = [result(), result(tokens=200, verify=40), result(ok=False)]
    grades = [Grade("fib", "pass", ""), Grade("gcd", "fail", ""), Grade("fib", "error", "")]
    cell = cell_stats(1024, 8, results, 2.0, grades, 0.0)
    assert cell["requests"] == 3 and cell["errors"] == 1 and cell["first_error"] == "boom"
    assert cell["output_tokens"] == 300 and cell["output_tok_s"] == 150
    assert cell["acceptance"]["mean"] == (4.0 + 5.0) / 2 and cell["acceptance"]["p50"] == 4.5
    assert cell["ttft_ms"]["p50"] == 50.0 and cell["itl_ms"]["count"] == 6
    assert cell["prompt_tokens"] == {"target": 1024, "min": 1024, "mean": 1024.0, "max": 1024}
    table = format_table([cell], {"server": {"url": "http://x", "version": "0.5.23"}, "host": {"gpus": None},
                                  "dir": "/runs/r"})
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["prompts", "ctx", "prompt", "conc"] and lines[0].rstrip().endswith("pass")
    assert lines[1].split()[:6] == ["-", "1024", "1024", "8", "3", "1"] and lines[1].endswith("1/3")
    assert "coding: pass 1/3" in table and "version 0.5.23" in table

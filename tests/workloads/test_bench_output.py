"""The bench's terminal output: the progress bar and the final table (pure formatting)."""

import io

from tui.commands.bench import ProgressBar, format_table
from workloads.bench import BenchProgress, cell_stats
from workloads.client import RequestResult
from workloads.evaluate import Grade


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


def test_progress_without_a_terminal_prints_one_line_per_cell():
    out = io.StringIO()
    bar = ProgressBar(out)
    bar.update(BenchProgress(0, 2, 60, 1, 3, 8, "running"))
    bar.update(BenchProgress(0, 2, 60, 1, 8, 8, "done"))
    assert out.getvalue() == "cell 1/2 done: context 60, concurrency 1, 8 requests\n"


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
    assert lines[0].split()[:3] == ["ctx", "prompt", "conc"] and lines[0].rstrip().endswith("pass")
    assert lines[1].split()[:5] == ["1024", "1024", "8", "3", "1"] and lines[1].endswith("1/3")
    assert "coding: pass 1/3" in table and "version 0.5.23" in table

"""benchmarks/crosscheck.py: without SGLang's venv it stops with the recipe and starts nothing; its
table pairs the runs of one round and cell and computes each ratio from the pair. (The crosscheck
itself is optional and never runs here: it needs SGLang installed.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.crosscheck import table

REPO = Path(__file__).resolve().parents[2]


def test_missing_sglang_venv_exits_with_the_recipe(tmp_path):
    missing = tmp_path / "no-venv" / "bin" / "python"
    done = subprocess.run([sys.executable, "benchmarks/crosscheck.py", "--sglang-python", str(missing)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"no SGLang venv at {missing}" in done.stderr
    assert 'pip install "sglang==0.5.23" --no-deps' in done.stderr
    assert "--sglang-python" in done.stderr
    assert done.stdout == ""


def _rec(rnd: int, tool: str, tok_s: float, acceptance: float | None = None, server: float = 3.0) -> dict:
    return {"round": rnd, "concurrency": 8, "tool": tool, "output_tok_s": tok_s, "acceptance": acceptance,
            "metrics_acceptance": server}


def test_table_ratios_are_per_round_pairs_with_their_spread():
    records = [_rec(1, "ddtune-wave", 110.0, 3.0), _rec(1, "bench_serving", 100.0),
               _rec(2, "ddtune-wave", 90.0, 3.3), _rec(2, "bench_serving", 100.0),
               _rec(3, "ddtune-wave", 500.0)]  # a round bench_serving did not run: left out
    lines = table(records, ["ddtune-wave"]).splitlines()
    assert lines[0] == "| cell | figure | bench_serving | ddtune-wave | ratio |"
    rows = {line.split(" | ")[1]: line for line in lines[2:]}
    # tok/s 110 and 90 against 100 and 100: ratios 1.1 and 0.9
    assert rows["output tok/s"] == ("| c=8 | output tok/s | 100.00 [100.00-100.00] | 100.00 [90.00-110.00] | "
                                    "1.000 [0.900-1.100] |")
    # acceptance: ddtune's total against the server's /metrics over the same run (3.0 both rounds)
    assert rows["acceptance: ddtune total / /metrics over its run"] == (
        "| c=8 | acceptance: ddtune total / /metrics over its run | /metrics, same run | "
        "3.150 [3.000-3.300] | 1.050 [1.000-1.100] |")
    assert "request throughput (req/s)" not in rows  # a figure no record carries is left out

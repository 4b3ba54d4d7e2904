"""Red team, round 3: ``ddtune report`` over records that pass every read-back check but hold extreme
finite numbers (1.7e308 beside 5e-324), as a hand-edited or foreign run file can. Before: ``--format
json`` wrote ``Infinity`` and ``NaN`` (no JSON document: a script's ``json.loads`` fails), the
Markdown said ``ahead of ... by +inf%`` and the per-dataset section a drift of ``+inf%``. Now a figure
that arithmetic takes past a float is left out ("-", null), through the real CLI."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import run_cli

CELL = {"context": 60, "concurrency": 1, "requests": 2, "errors": 0, "prompts": "story",
        "ttft_ms": {"p50": 20.0, "p95": 22.0}, "itl_ms": {"p50": 10.0, "p95": 12.0}}


def bench_file(path, cells: list[dict]) -> str:
    path.write_text(json.dumps({"run": {"kind": "bench", "id": path.stem}, "cells": cells}))
    return str(path)


def cell(tok_s: float, accept: float, concurrency: int = 1) -> dict:
    return {**CELL, "concurrency": concurrency, "output_tok_s": tok_s,
            "acceptance": {"total": accept, "mean": accept, "source": "request"}}


@pytest.mark.parametrize("case", ["huge-twice", "tiny-reference", "drift-over-tiny"])
def test_extreme_finite_numbers_leave_no_inf_or_nan_in_any_format(tmp_path, case):
    one = lambda name, tok, acc: bench_file(tmp_path / name, [cell(tok, acc)])  # noqa: E731
    if case == "huge-twice":  # one configuration measured twice: its mean overflowed
        (tmp_path / "again").mkdir()
        files = [one("huge.json", 1.7e308, 1.7e308),
                 bench_file(tmp_path / "again" / "huge.json", [cell(1.7e308, 1.7e308)])]
    elif case == "tiny-reference":  # the reference runs at 5e-324 tok/s: every ratio over it overflowed
        files = [one("tiny.json", 5e-324, 5e-324), one("real.json", 290.0, 3.5)]
    else:  # acceptance 5e-324 at concurrency 1 and 4.0 at 2: a drift of +inf%
        files = [bench_file(tmp_path / "drift.json", [cell(290.0, 5e-324, 1), cell(380.0, 4.0, 2)])]
    for fmt in ("json", "md", "csv"):
        out = run_cli("report", *files, "--format", fmt)
        assert out.returncode == 0 and out.stderr == "", out.stderr[-3000:]
        if fmt == "json":
            json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} in report --format json"))
        else:
            found = re.findall(r"\b(?:inf|nan|infinity)\b", out.stdout, re.IGNORECASE)
            assert not found, (fmt, found, out.stdout[-3000:])


def test_names_and_reasons_from_a_run_file_reach_no_terminal_as_escape_sequences(tmp_path):
    """A configuration name and a failure reason holding an OSC title and colour sequences (a sweep
    folder anyone may have written): the Markdown and CSV hold their text, never the escapes."""
    name = "b16\x1b]2;pwned\x07\x1b[31m"
    folder = tmp_path / "sweep"
    (folder / "01-a-r1" / "bench").mkdir(parents=True)
    (folder / "01-a-r1" / "bench" / "run.json").write_text(json.dumps({"kind": "bench"}))
    (folder / "01-a-r1" / "bench" / "cells.jsonl").write_text(json.dumps(cell(290.0, 3.5)) + "\n")
    (folder / "sweep.json").write_text(json.dumps({"plan": {"configs": [{"name": name, "knobs": {}}, {"name": "b"}]}}))
    slots = [{"slot": {"index": 0, "config": name, "repeat": 1, "key": "01-a-r1"}, "status": "done"},
             {"slot": {"index": 1, "config": "b", "repeat": 1}, "status": "failed",
              "reason": "died\x1b[2J\x1b[Hforged"}]
    (folder / "slots.jsonl").write_text("".join(json.dumps(s) + "\n" for s in slots))
    for fmt in ("md", "csv"):
        out = run_cli("report", str(folder), "--format", fmt)
        assert out.returncode == 0 and out.stderr == "", out.stderr[-3000:]
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout, repr(out.stdout[-2000:])
        assert "b16" in out.stdout and (fmt == "csv" or "diedforged" in out.stdout), out.stdout[-2000:]


def test_an_interval_whose_end_leaves_the_floats_is_left_out(tmp_path):
    """Hypothesis's find after the fix above: a cell's acceptance of 1.3e307, its interval from the
    spread of its requests' own acceptance (1 and 0 tokens a step): the value is finite, value + half
    width is past a float, and the interval's end was written as Infinity."""
    one = {"context": 1024, "concurrency": 1, "output_tok_s": 0.0, "requests": 0, "errors": 0,
           "acceptance": {"mean": 1.3116103420854487e307}, "ttft_ms": {"p50": 0.0}, "verdicts": {}}
    answers = [{"context": 1024, "concurrency": 1, "output_tokens": tokens, "e2e_s": 0.0, "spec_verify_ct": 1.0}
               for tokens in (0.0, 1.0)]
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"kind": "bench", "sweep": {"config": {"name": "a"}}}))
    (folder / "cells.jsonl").write_text(json.dumps(one) + "\n")
    (folder / "responses.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    out = run_cli("report", str(folder), "--format", "json")
    assert out.returncode == 0 and out.stderr == "", out.stderr[-3000:]
    json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} in report --format json"))

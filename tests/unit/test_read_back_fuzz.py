"""Property (issue 28, item 6; the model is test_bad_input_fuzz.py): whatever values the files ddtune
reads back hold - ``startups.jsonl``, the plan and the records a ``--resume`` continues from, a load
run's summary - one bad value costs only itself. It is refused with one line naming the file
(a plan), or skipped with a note (a record: measured again; a startup: no ETA from it), or shown as
"-" (a summary number); never an exception, and nothing kept is absurd: every number that goes on is
finite, non-negative where a count or a time is, and within its plausible bound."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.core.errors import UsageError
from backends.server.startup import MAX_PHASE_S, WORK_PHASES, StartupHistory
from tests.unit.test_bad_input_fuzz import (CELL, EXTREMES, FUZZ, JSON_VALUES, NUMBERS, assert_clean, ddtune, table,
                                            write_folder, written)
from tests.unit.test_bad_input_fuzz import private_state  # noqa: F401 -- the same autouse state dir here
from workloads.bench.matrix import BenchPlan
from workloads.runs.checks import MAX_TOK_S, PLAUSIBLE, read_plan, usable
from workloads.runs.checks import cell as check_cell
from workloads.runs.checks import result as check_result
from workloads.search.engine import Target
from workloads.search.space import SearchSpace
from workloads.search.strategy import Observation, SearchOptions
from workloads.sweep.plan import SweepPlan, SweepStore

ABSURD = st.sampled_from([10**400, -10**400, float("nan"), float("inf"), -float("inf"), -3e40, 2**63, -1, 1e300])
VALUES = NUMBERS | ABSURD | JSON_VALUES


def jsonl(records) -> st.SearchStrategy[bytes]:
    """JSON lines of ``records`` (NaN, Infinity and 400-digit numbers as Python writes them), with
    now and then a torn or binary line."""
    line = records.map(lambda r: json.dumps(r).encode()) | st.binary(max_size=30)
    return st.lists(line, max_size=5).map(lambda lines: b"\n".join(lines) + b"\n")


# --- startups.jsonl ------------------------------------------------------------------------------

STARTUP = st.fixed_dictionaries({"server": st.just("s") | JSON_VALUES, "ok": st.booleans() | JSON_VALUES,
                                 "phases": table(WORK_PHASES, VALUES, 4) | JSON_VALUES}) | JSON_VALUES


@given(jsonl(STARTUP))
@FUZZ
def test_startups_history_keeps_only_plausible_durations(data):
    with tempfile.TemporaryDirectory() as d:
        history = StartupHistory(written(d, "startups.jsonl", data))
        notes: list[str] = []
        medians = history.medians("s", notes.append)
        assert all(isinstance(v, float) and 0 <= v <= MAX_PHASE_S for v in medians.values()), medians
        assert len(notes) <= 1 and all(n.startswith(f"{history.path}: skipped ") for n in notes)
        for rec in history.starts():
            assert all(0 <= rec["phases"][p] <= MAX_PHASE_S for p in WORK_PHASES if rec["phases"].get(p) is not None)


# --- plans read back for a resume -----------------------------------------------------------------

BENCH_PLAN = st.fixed_dictionaries({"contexts": st.lists(VALUES, max_size=3) | VALUES,
                                    "concurrencies": st.lists(VALUES, max_size=3) | VALUES,
                                    "max_tokens": VALUES, "coding": st.booleans() | VALUES},
                                   optional={"requests_per_cell": VALUES, "warmup": VALUES,
                                             "release": st.sampled_from(["wave", "staggered"]) | VALUES})
GOOD_BENCH = {"contexts": [60], "concurrencies": [1], "max_tokens": 4, "coding": False}
SWEEP_PLAN = st.fixed_dictionaries({"configs": st.lists(table(["name", "knobs", "baseline"], VALUES, 3), max_size=2)
                                    | VALUES, "bench": BENCH_PLAN | st.just(GOOD_BENCH)},
                                   optional={"repeats": VALUES, "warmup_requests": VALUES,
                                             "eval": table(["max_tokens", "concurrency", "problems"], VALUES, 3)})
SEARCH = st.fixed_dictionaries({}, optional={
    "options": table(["waves", "eta", "rungs", "passes", "max_restarts", "lanes"], VALUES, 6) | VALUES,
    "target": table(["context", "concurrency", "max_tokens", "warmup", "warmup_requests"], VALUES, 5) | VALUES,
    "space": st.lists(st.tuples(st.sampled_from(["budget", "topk"]), st.lists(VALUES, max_size=3)), max_size=2)
    | st.just([["budget", list(range(400))], ["topk", list(range(400))]]) | VALUES})


def plausible_ints(values, name: str, low: int = 1) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and low <= v <= PLAUSIBLE[name] for v in values)


def plan_or_none(where: str, parse):
    """The plan ``parse`` reads back, or None after checking the error is one line naming ``where``."""
    try:
        return read_plan(where, parse)
    except UsageError as exc:
        assert exc.message.startswith(f"{where}: not a plan ddtune wrote (") and "\n" not in exc.message
        return None


@given(BENCH_PLAN | VALUES)
@FUZZ
def test_a_bench_plan_read_back_is_plausible_or_one_error(doc):
    if (plan := plan_or_none("run.json plan", lambda: BenchPlan.from_json(doc))) is None:
        return
    assert plan.contexts and plausible_ints(plan.contexts, "context")
    assert plan.concurrencies and plausible_ints(plan.concurrencies, "concurrency")
    assert plausible_ints([plan.max_tokens], "max_tokens") and plausible_ints([plan.warmup], "requests", 0)


@given(SWEEP_PLAN | VALUES)
@FUZZ
def test_a_sweep_plan_read_back_is_plausible_or_one_error(doc):
    if (plan := plan_or_none("sweep.json plan", lambda: SweepPlan.from_json(doc))) is None:
        return
    assert plausible_ints([plan.repeats], "repeats") and len(plan.schedule()) <= 2 * PLAUSIBLE["repeats"]
    assert plan.eval is None or plausible_ints([plan.eval.concurrency], "concurrency")


@given(SEARCH, st.lists(table(["point", "samples", "restart_s", "lane", "failed"], VALUES, 5)
                        | st.fixed_dictionaries({"point": st.just([4, 2]),
                                                 "samples": st.lists(VALUES, max_size=3)}), max_size=3))
@FUZZ
def test_a_search_read_back_is_plausible_or_one_error(doc, observations):
    options = plan_or_none("search.json options", lambda: SearchOptions.from_json(doc["options"]))
    target = plan_or_none("search.json target", lambda: Target.from_json(doc["target"]))
    space = plan_or_none("search.json space", lambda: SearchSpace.from_json(doc["space"]))
    if options is None or target is None or space is None:
        return
    assert plausible_ints([options.waves], "waves") and plausible_ints([target.concurrency], "concurrency")
    assert math.prod(len(v) for _, v in space.axes) <= PLAUSIBLE["points"]
    for obs in observations:
        found = plan_or_none("rounds.jsonl", lambda o=obs: Observation.from_json(o, space))
        assert found is None or all(0 <= s <= MAX_TOK_S for s in found.samples)


# --- records a resume goes on from ------------------------------------------------------------------

RESULT = table(["problem", "verdict", "detail", "attempt"], st.sampled_from(["fib", "pass", "fail"]) | VALUES, 4)


@given(st.lists(CELL | table(["context", "concurrency", "output_tok_s", "requests"], VALUES, 4), max_size=4),
       st.lists(RESULT | VALUES, max_size=4))
@FUZZ
def test_a_resume_goes_on_only_from_records_that_hold(cells, results):
    notes: list[str] = []
    kept = usable(cells, check_cell, "cells.jsonl", notes.append, "measured again")
    for cell in kept:
        assert plausible_ints([cell["context"], cell["concurrency"]], "context")  # hashable, usable as a key
        tok_s = cell.get("output_tok_s")
        assert tok_s is None or (math.isfinite(tok_s) and tok_s >= 0)
    graded = usable(results, check_result, "results.jsonl", notes.append, "asked again")
    assert all(isinstance(r["problem"], str) and r["verdict"] in ("pass", "fail") for r in graded)
    assert len(notes) == (len(kept) < len(cells)) + (len(graded) < len(results))


SLOT = st.fixed_dictionaries({"slot": table(["index", "config", "repeat"], st.sampled_from([0, 1, "a"]) | VALUES, 3),
                              "status": st.sampled_from(["done", "failed"]) | VALUES},
                             optional={"started_at": VALUES, "finished_at": VALUES, "server": JSON_VALUES})


@given(jsonl(SLOT))
@FUZZ
def test_sweep_slot_records_read_back_never_raise(data):
    with tempfile.TemporaryDirectory() as d:
        written(d, "slots.jsonl", data)
        for record in SweepStore(Path(d)).records():
            assert 0 <= record.slot.index and 1 <= record.slot.repeat <= PLAUSIBLE["repeats"]
            assert all(math.isfinite(t) and t >= 0 for t in (record.started_at, record.finished_at))


# --- a load run's summary in report --------------------------------------------------------------

LOAD_SUMMARY = table(["finished", "errors", "cancelled", "output_tok_s", "elapsed_s", "acceptance", "verdicts",
                      "windows"], VALUES | EXTREMES | st.fixed_dictionaries({"total": VALUES})
                     | st.dictionaries(st.sampled_from(["pass", "fail"]), VALUES, max_size=2)
                     | st.lists(table(["t_s", "tok_s", "acceptance"], VALUES, 3), max_size=3), 8)


@given(st.lists(LOAD_SUMMARY, min_size=1, max_size=2), st.sampled_from(["md", "csv", "json"]))
@FUZZ
def test_report_of_load_runs_with_any_summary_numbers(summaries, fmt):
    with tempfile.TemporaryDirectory() as d:
        folders = [str(write_folder(Path(d) / f"load{i}", {"run.json": json.dumps(
            {"kind": "load", "status": "done", "summary": {**s, "finished": s.get("finished", 1)}}).encode()}))
            for i, s in enumerate(summaries)]
        code, out, err = ddtune("report", *folders, "--format", fmt)
        assert_clean(code, err, Path(d))
        if code == 0 and fmt == "json":
            json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the report"))

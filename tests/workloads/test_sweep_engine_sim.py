"""The sweep engine against real simulator processes, through a test controller (no lifecycle):
events, a failing configuration, resume, the eval. Finding the model's best configuration is tested
end to end through the CLI (test_sweep_cli_sim.py)."""

import asyncio

import pytest

from tests.workloads.sim_controller import SimController
import workloads.sweep as ev
from workloads.bench.plan import BenchPlan
from workloads.report.compare import build_report
from workloads.report.inputs import read_sweep
from workloads.sweep.engine import SweepEngine
from workloads.sweep.plan import EvalSettings, SweepConfig, SweepPlan, SweepStore

B8 = SweepConfig("b8-t4-w2048", {"budget": 8, "topk": 4, "window": 2048})
B16 = SweepConfig("b16-t4-w2048", {"budget": 16, "topk": 4, "window": 2048})
B4 = SweepConfig("b4-t4-w2048", {"budget": 4, "topk": 4, "window": 2048})
SMALL = BenchPlan((60,), (1, 2), 32, False, 2, 0)


@pytest.fixture
def controller(tmp_path):
    made = []

    def make(**kw):
        c = SimController(tmp_path / "logs", **kw)
        made.append(c)
        return c

    try:
        yield make
    finally:
        for c in made:
            c.kill_all()


def run(plan, store, ctl, events=None):
    async def main():
        try:
            return await SweepEngine(plan, store, ctl, on_event=(events.append if events is not None else None)).run()
        finally:
            await ctl.shutdown()
    return asyncio.run(main())


def test_a_failing_configuration_is_recorded_and_the_sweep_goes_on(tmp_path, state_dir, controller):
    plan = SweepPlan((B8, B16, B4), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    ctl = controller(extra=("--sim-step-ms", "0"), fail=("b16-t4-w2048",))
    events = []
    records = run(plan, store, ctl, events)
    assert [(r.slot.config, r.status) for r in records] == [
        ("b8-t4-w2048", "done"), ("b16-t4-w2048", "failed"), ("b4-t4-w2048", "done")]
    assert "exited" in records[1].reason
    report = build_report(read_sweep(store.path))
    assert [f.label for f in report.failures] == ["b16-t4-w2048"]
    assert report.configs == ("b8-t4-w2048", "b4-t4-w2048")
    assert store.read()["slots_failed"] == 1 and store.read()["status"] == "done"
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "SweepStarted" and kinds[-1] == "SweepFinished"
    assert kinds.count("SlotStarted") == kinds.count("SlotFinished") == 3
    assert kinds.count("CellFinished") == 4  # two cells for each config that started
    applied = [e.applied for e in events if isinstance(e, ev.ServerApplied)]
    assert [a.ok for a in applied] == [True, False, True] and all(a.restarted for a in applied)
    finished = [e for e in events if isinstance(e, ev.SlotFinished)]
    assert finished[0].eta_s is not None and finished[0].eta_s > 0 and finished[-1].eta_s == 0.0
    cells = [e for e in events if isinstance(e, ev.CellFinished)]
    assert [(e.cells_done, e.cells_total) for e in cells[:2]] == [(1, 2), (2, 2)]


def test_interrupted_sweep_resumes_without_rerunning_finished_slots(tmp_path, state_dir, controller):
    plan = SweepPlan((B8, B4), SMALL, repeats=2)  # b8 b4 b4 b8
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    ctl = controller(extra=("--sim-step-ms", "0"))

    def stop_after_second(event):
        if isinstance(event, ev.SlotFinished) and event.record.slot.index == 1:
            raise KeyboardInterrupt

    async def first():
        try:
            await SweepEngine(plan, store, ctl, on_event=stop_after_second).run()
        finally:
            await ctl.shutdown()

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(first())
    assert store.read()["status"] == "interrupted"
    assert [r.slot.index for r in store.records()] == [0, 1]
    again = SweepStore.open(tmp_path / "sweep")
    ctl2 = controller(extra=("--sim-step-ms", "0"))
    events = []
    records = run(again.plan(), again, ctl2, events)
    assert ctl2.applied == ["b4-t4-w2048", "b8-t4-w2048"]  # only slots 2 and 3
    assert [r.slot.index for r in records] == [0, 1, 2, 3]
    assert events[0].done == (0, 1)
    assert again.read()["status"] == "done" and len(again.read()["resumed_at"]) == 1
    report = build_report(read_sweep(again.path))
    assert report.row("b8-t4-w2048", (60, 2)).repeats == 2


def test_eval_runs_after_the_bench_and_lands_in_the_slot_folder(tmp_path, state_dir, controller):
    plan = SweepPlan((B8,), BenchPlan((60,), (1,), 16, False, 1, 0), 1, EvalSettings(1024, 2, ("is_palindrome", "fib")))
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    events = []
    records = run(plan, store, controller(extra=("--sim-step-ms", "0", "--sim-wrong-rate", "0")), events)
    assert records[0].status == "done" and records[0].eval_dir.startswith(str(store.path / "01-b8-t4-w2048-r1"))
    summary = next(e for e in events if isinstance(e, ev.EvalFinished)).summary
    assert sum(summary.values()) == 2
    report = build_report(read_sweep(store.path))
    assert report.pass_rates[0].total == 2


def test_a_slot_cut_short_mid_bench_keeps_its_cells_and_runs_only_the_missing_ones(tmp_path, state_dir, controller):
    import json

    plan = SweepPlan((B8,), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    bench = store.slot_dir(plan.schedule()[0]) / "bench"
    bench.mkdir()
    (bench / "run.json").write_text(json.dumps({"kind": "bench", "status": "interrupted", "plan": SMALL.to_json()}))
    (bench / "cells.jsonl").write_text(json.dumps({"context": 60, "concurrency": 1, "output_tok_s": 12345.0}) + "\n")
    records = run(plan, store, controller(extra=("--sim-step-ms", "0")))
    assert records[0].status == "done"
    cells = [json.loads(x) for x in (bench / "cells.jsonl").read_text().splitlines()]
    assert [(c["context"], c["concurrency"]) for c in cells] == [(60, 1), (60, 2)]
    assert cells[0]["output_tok_s"] == 12345.0  # kept, not re-measured
    run_doc = json.loads((bench / "run.json").read_text())
    assert run_doc["status"] == "done" and len(run_doc["resumed_at"]) == 1
    assert run_doc["sweep"]["slot"] == "01-b8-t4-w2048-r1"


def test_a_server_that_dies_mid_bench_fails_its_slot_and_the_next_config_runs(tmp_path, state_dir, controller):
    plan = SweepPlan((B8, B4), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    ctl = controller(extra=("--sim-step-ms", "0"))
    events = []

    def on_event(event):
        events.append(event)
        if isinstance(event, ev.CellFinished) and event.slot.index == 0 and event.cells_done == 1:
            ctl.current[1].kill_group()  # SIGKILL the whole server between the two cells

    async def main():
        try:
            return await SweepEngine(plan, store, ctl, on_event=on_event).run()
        finally:
            await ctl.shutdown()

    records = asyncio.run(main())
    assert [(r.slot.config, r.status) for r in records] == [("b8-t4-w2048", "failed"), ("b4-t4-w2048", "done")]
    assert "stopped answering" in records[0].reason
    assert len((store.path / "01-b8-t4-w2048-r1" / "bench" / "cells.jsonl").read_text().splitlines()) == 1

"""The lossless check inside a sweep with a baseline, against real simulator processes: through the
CLI (zero divergences on the default simulator, divergences with --sim-diverge-rate, the report's
section) and through the engine (a configuration that runs before the baseline says so)."""

import asyncio
import json

import pytest

from tests.workloads.sim_controller import SimController
from tests.workloads.test_sweep_cli_sim import box, records, server_alive, sweep  # noqa: F401  (box: a fixture)
from workloads.bench.plan import BenchPlan
from workloads.report.compare import build_report
from workloads.report.inputs import read_sweep
from workloads.sweep.engine import SweepEngine
from workloads.sweep.lossless import FILE, MAX_TOKENS, PROMPTS
from workloads.sweep.plan import SweepConfig, SweepPlan, SweepStore

ONE_CELL = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "1", "--max-tokens", "16",
            "--warmup", "0", "--no-eval")


@pytest.mark.parametrize("rate", [None, "0.5"])
def test_sweep_with_baseline_checks_every_configuration_against_it(box, rate):  # noqa: F811
    cfg = box.config("--sim-step-ms", "0", *(("--sim-diverge-rate", rate) if rate else ()))
    out = box.tmp / "sweep"
    r = sweep(box, "--config", cfg, "sweep", "b8-t4-w2048", "b16-t4-w2048", "--baseline", *ONE_CELL,
              "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr[-3000:]  # a divergence is a finding, never a failed sweep
    recs = records(out)
    assert [x["slot"]["config"] for x in recs] == ["baseline", "b8-t4-w2048", "b16-t4-w2048"]
    assert all(x["status"] == "done" for x in recs)
    base = json.loads((out / FILE).read_text())
    assert base["speculative"] is False and len(base["prompts"]) == PROMPTS
    assert recs[0]["lossless"]["status"] == "recorded" and recs[0]["lossless"]["prompts"] == PROMPTS
    checks = [x["lossless"] for x in recs[1:]]
    assert all(c["status"] == "compared" and c["prompts"] == PROMPTS and len(c["first"]) == PROMPTS for c in checks)
    rows = {row["config"]: row for row in json.loads(r.stdout)["report"]["lossless"]}
    assert rows["baseline"]["notes"] == ["recorded"] and rows["baseline"]["compared"] == 0
    md = sweep(box, "report", str(out)).stdout
    assert "## lossless check" in md
    if rate is None:
        assert all(c["diverged"] == 0 and c["first"] == [None] * PROMPTS for c in checks)
        assert rows["b8-t4-w2048"]["diverged"] == 0 and rows["b16-t4-w2048"]["rate"] == 0.0
        assert "0/8 prompts diverged" in r.stderr and "DIVERGED" not in r.stderr and "LOSSLESS CHECK FAILED" not in md
    else:
        for c in checks:
            assert 0 < c["diverged"] < PROMPTS and c["rate"] == c["diverged"] / PROMPTS
            assert sum(p is not None for p in c["first"]) == c["diverged"]
            assert all(0 <= p < MAX_TOKENS for p in c["first"] if p is not None)
        assert rows["b8-t4-w2048"]["diverged"] == checks[0]["diverged"]
        assert "prompts DIVERGED from the baseline" in r.stderr
        assert "**LOSSLESS CHECK FAILED: b8-t4-w2048 changed the greedy output of" in md
    assert not server_alive(box.state)


def test_a_configuration_before_the_baseline_is_not_checked_and_baseline_repeats_are(tmp_path, state_dir):
    b8 = SweepConfig("b8-t4-w2048", {"budget": 8, "topk": 4, "window": 2048})
    plan = SweepPlan((b8, SweepConfig("baseline", {}, True)), BenchPlan((60,), (1,), 16, False, 1, 0), repeats=2)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    ctl = SimController(tmp_path / "logs", extra=("--sim-step-ms", "0", "--sim-diverge-rate", "1"))

    async def main():
        try:
            return await SweepEngine(plan, store, ctl).run()
        finally:
            await ctl.shutdown()
    try:
        recs = asyncio.run(main())
    finally:
        ctl.kill_all()
    # serpentine order: b8, baseline, baseline, b8
    assert [(r.slot.config, r.status, (r.lossless or {}).get("status")) for r in recs] == [
        ("b8-t4-w2048", "done", "no baseline yet"), ("baseline", "done", "recorded"),
        ("baseline", "done", "compared"), ("b8-t4-w2048", "done", "compared")]
    assert recs[2].lossless["diverged"] == 0  # the simulator is greedy without speculation
    assert recs[3].lossless["diverged"] == PROMPTS  # rate 1: every speculative output leaves the greedy one
    report = build_report(read_sweep(store.path))
    row = {r.config: r for r in report.lossless}["b8-t4-w2048"]
    assert (row.compared, row.diverged, row.prompts, row.notes) == (1, PROMPTS, PROMPTS, ("no baseline yet",))

"""The report per dataset: the published tau beside each cell with whether it compares and why,
acceptance drift across concurrency flagged, and the best configuration per concurrency band by the
robust rule (median - 1.4826 MAD over >= 3 repeats, noisy ones rejected, ties to the cheaper)."""

import json

import pytest

from tests.helpers import run_cli
from tests.workloads.test_report import cell
from workloads.bench.plan import BenchPlan
from workloads.report.bands import cost, score
from workloads.report.compare import build_report
from workloads.report.inputs import load_inputs, read_sweep
from workloads.report.papers import papers, verdict
from workloads.report.render import to_json, to_markdown
from workloads.sweep.plan import SlotRecord, SweepConfig, SweepPlan, SweepStore

INFO = {"model_path": "Qwen/Qwen3-8B", "speculative_algorithm": "DFLASH", "speculative_num_draft_tokens": 16}


def test_the_papers_table_holds_the_published_figures_with_their_sources():
    figures = papers()
    assert len(figures) == 8 * 3 * 2 + 3 * 3 + 5
    he = {(f.model, f.drafter, f.temperature): f.tau for f in figures if f.dataset == "HumanEval"}
    assert he[("Qwen3-8B", "DFLASH", 0.0)] == 6.61 and he[("Qwen3-8B", "DDTREE", 0.0)] == 9.67
    assert he[("Qwen3-8B", "DFLASH", 1.0)] == 5.48 and he[("Qwen3.5 MoE", "DFLASH", 0.0)] == 6.89
    assert all(f.source for f in figures) and {f.block_size for f in figures} == {16}


def _judge(dataset="MT-Bench", **kw):
    args = {"model": "Qwen/Qwen3-8B", "algorithm": "DFLASH", "block_size": 16, "ignore_eos": False,
            "concurrency": 1, "context": 0, "multi_turn": ["live reply"]}
    return verdict(dataset, **{**args, **kw})


def test_comparable_yes_partly_no_with_the_reason():
    yes = _judge()
    assert yes.comparable == "yes" and yes.reasons == () and yes.figure.tau == 4.28
    templated = _judge("HumanEval")
    assert templated.comparable == "partly" and templated.figure.tau == 6.61
    assert templated.reasons == ("template: prompts sent as written (the papers wrap HumanEval in their own)",)
    busy = _judge(concurrency=8, context=4096, block_size=8)
    assert busy.comparable == "partly" and len(busy.reasons) == 3 and "block size 8" in busy.reasons[0]
    forced = _judge(ignore_eos=True)
    assert forced.comparable == "no" and "ignore_eos" in forced.reasons[0]
    other = _judge(model="meta-llama/Llama-3.1-8B")
    assert other.comparable == "no" and other.figure is None and "Qwen3-8B" in other.reasons[0]
    tree = _judge(algorithm="DDTREE")
    assert tree.comparable == "yes" and tree.figure.tau == 6.58
    assert _judge("my own traffic") is None


def _sweep(tmp_path, speeds, accept=None, knobs=None, prompts="humaneval", contended=()):
    """speeds: {config: {concurrency: [tok/s per repeat]}} at one context; accept: {concurrency: tau}."""
    names = list(speeds)
    configs = tuple(SweepConfig(n, (knobs or {}).get(n, {"budget": 8})) for n in names)
    concs = tuple(sorted({c for per in speeds.values() for c in per}))
    repeats = len(next(iter(next(iter(speeds.values())).values())))
    plan = SweepPlan(configs, BenchPlan((0,), concs, 64, prompts=(prompts,)), repeats)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    for slot in plan.schedule():
        bench = store.slot_dir(slot) / "bench"
        bench.mkdir()
        config = configs[names.index(slot.config)].to_json()
        run = {"kind": "bench", "sweep": {"config": config}, "plan": plan.bench.to_json(),
               "server": {"server_info": INFO},
               "prompt_sets": [{"name": prompts, "dataset": "HumanEval" if prompts == "humaneval" else None}]}
        (bench / "run.json").write_text(json.dumps(run))
        rows = []
        for conc in concs:
            c = cell(0, conc, speeds[slot.config][conc][slot.repeat - 1], (accept or {}).get(conc, 6.5))
            rows.append({**c, "prompts": prompts, "acceptance": {**c["acceptance"], "total": c["acceptance"]["mean"]},
                         "multi_turn": [], "contended": (slot.config, slot.repeat) in contended,
                         "note": "someone else's" if (slot.config, slot.repeat) in contended else None})
        (bench / "cells.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        store.append(SlotRecord(slot, "done", None, str(bench), None, {"restarted": True, "restart_s": 4.0}, 1, 2))
    return store.path


def test_acceptance_per_dataset_beside_the_papers_and_drift_flagged(tmp_path):
    path = _sweep(tmp_path, {"b8": {1: [100, 101, 99], 32: [900, 905, 895]}}, accept={1: 6.5, 32: 7.1})
    report = build_report(read_sweep(path))
    (one, many) = report.datasets
    assert one.dataset == "HumanEval" and one.verdict.figure.tau == 6.61 and one.verdict.comparable == "partly"
    assert many.cell.concurrency == 32 and any("concurrency 32" in r for r in many.verdict.reasons)
    (drift,) = report.drifts
    assert drift.low == (1, pytest.approx(6.5)) and drift.high == (32, pytest.approx(7.1))
    assert drift.spread == pytest.approx(0.0923, abs=1e-3)
    text = to_markdown(report)
    assert "## acceptance per dataset, beside the papers" in text and "6.61 (Qwen3-8B, DFLASH)" in text
    assert "**DRIFT** b8 on humaneval, context as is: acceptance 6.50 at concurrency 1 and 7.10 at 32" in text
    doc = to_json(report)
    assert doc["datasets"][0]["paper"]["tau"] == 6.61 and doc["drifts"][0]["spread"] > 0.05
    flat = build_report(read_sweep(_sweep(tmp_path / "flat", {"b8": {1: [1, 1, 1], 8: [2, 2, 2]}},
                                          accept={1: 6.5, 8: 6.7})))
    assert flat.drifts == ()  # 3%: within what concurrency moves acceptance


def test_best_configuration_per_concurrency_band(tmp_path):
    speeds = {  # b16 wins at low concurrency, b8 from 8 up; b4 is noisy at 32
        "b4": {1: [200, 201, 199], 8: [700, 702, 698], 32: [900, 1300, 700]},
        "b8": {1: [230, 231, 229], 8: [800, 802, 798], 32: [1200, 1201, 1199]},
        "b16": {1: [260, 262, 258], 8: [780, 781, 779], 32: [1000, 1001, 999]},
    }
    knobs = {"b4": {"budget": 4, "topk": 4, "window": 2048}, "b8": {"budget": 8, "topk": 4, "window": 2048},
             "b16": {"budget": 16, "topk": 4, "window": 2048}}
    report = build_report(read_sweep(_sweep(tmp_path, speeds, knobs=knobs)))
    assert [(b.low, b.high, b.config) for b in report.bands] == [(1, 1, "b16"), (8, 32, "b8")]
    assert report.bands[1].up_command() == "ddtune up --set budget=8 --set topk=4 --set window=2048"
    noisy = next(s for s in report.bands[1].scores if s.config == "b4" and s.concurrency == 32)
    assert noisy.rejected.startswith("relative MAD") and noisy.median == 900
    text = to_markdown(report)
    assert "**Best at concurrency 8-32: b8**: `ddtune up --set budget=8 --set topk=4 --set window=2048`" in text
    assert "b4 at c32: relative MAD" in text


def test_the_robust_score_and_the_tie_rule():
    s = score("x", 8, [100.0, 110.0, 90.0, 100.0])
    assert s.median == 100.0 and s.mad == 5.0 and s.score == pytest.approx(100 - 1.4826 * 5)
    assert score("x", 8, [100.0, 101.0]).rejected == "2 repeat(s): the rule needs 3"
    # within 1%, the cheaper: speculation off, then the smaller budget, topk, window (none: the dearest)
    assert cost(None, True) < cost({"budget": 4}, False) < cost({"budget": 8, "topk": 2}, False)
    assert cost({"budget": 8, "window": 2048}, False) < cost({"budget": 8, "window": None}, False)


def test_ties_within_one_percent_go_to_the_cheaper(tmp_path):
    speeds = {"b16": {1: [300, 301, 299], 8: [1000, 1001, 999]}, "b8": {1: [298, 299, 297], 8: [900, 901, 899]}}
    knobs = {"b16": {"budget": 16}, "b8": {"budget": 8}}
    report = build_report(read_sweep(_sweep(tmp_path, speeds, knobs=knobs)))
    assert [(b.low, b.high, b.config) for b in report.bands] == [(1, 1, "b8"), (8, 8, "b16")]


def test_report_cli_prints_the_bands_and_the_papers(tmp_path):
    path = _sweep(tmp_path, {"b8": {1: [100, 101, 99], 8: [500, 505, 495]}})
    out = run_cli("report", str(path), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["bands"][0]["config"] == "b8" and doc["datasets"][0]["dataset"] == "HumanEval"
    assert load_inputs([str(path)]).runs[0].facts.model == "Qwen/Qwen3-8B"


def test_a_contended_run_is_marked_in_the_report(tmp_path):
    path = _sweep(tmp_path, {"b8": {1: [100, 101, 99]}}, contended={("b8", 2)})
    report = build_report(read_sweep(path))
    assert report.row("b8", report.cells[0]).contended == 1
    assert "| 1/3 CONTENDED |" in to_markdown(report) and to_json(report)["cells"][0]["contended_runs"] == 1

"""ddtune report over hand-made run folders: numbers we know, every format, the CLI's errors."""

import csv
import io
import json

import pytest

from backends.core.errors import UsageError
from tests.helpers import run_cli
from workloads.bench.plan import BenchPlan
from workloads.report.compare import build_report, wilson
from workloads.report.render import to_csv, to_json, to_markdown
from workloads.report.inputs import load_inputs, read_sweep
from workloads.sweep.plan import SlotRecord, SweepConfig, SweepPlan, SweepStore

CELLS = [(1024, 1), (4096, 8)]


def cell(ctx, conc, tok_s, acc=None, ttft=100.0):
    return {"context": ctx, "concurrency": conc, "requests": 8, "errors": 0, "output_tok_s": tok_s,
            "acceptance": {"mean": acc, "p50": acc, "count": 8 if acc else 0},
            "ttft_ms": {"p50": ttft, "p95": ttft * 1.5}, "itl_ms": {"p50": 10.0, "p95": 12.0}}


def make_sweep(tmp_path, speeds, repeats=1, failed=(), baseline=True):
    """speeds: {config: {cell: [tok/s per repeat]}}. Writes a sweep folder as the engine would."""
    names = list(speeds) + list(failed)
    configs = tuple(SweepConfig(n, {} if n == "baseline" else {"budget": 8}, n == "baseline") for n in names)
    plan = SweepPlan(configs, BenchPlan((1024, 4096), (1, 8), 64), repeats)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    for slot in plan.schedule():
        if slot.config in failed:
            store.append(SlotRecord(slot, "failed", "fatal log line: oom: CUDA out of memory", None, None,
                                    {"restarted": True, "restart_s": 3.0, "phases": {"loading": 2.0}}, 1, 2))
            continue
        bench = store.slot_dir(slot) / "bench"
        bench.mkdir()
        config = configs[names.index(slot.config)].to_json()
        (bench / "run.json").write_text(json.dumps({"kind": "bench", "sweep": {"config": config}}))
        rows = [cell(ctx, conc, speeds[slot.config][(ctx, conc)][slot.repeat - 1],
                     None if slot.config == "baseline" else 3.5) for ctx, conc in CELLS]
        (bench / "cells.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        resp = [{"context": ctx, "concurrency": conc, "ok": True, "output_tokens": 64, "e2e_s": 64 / (v + (i % 3 - 1)),
                 "spec_verify_ct": 18} for (ctx, conc) in CELLS for i, v in enumerate([10.0] * 8)]
        (bench / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in resp))
        store.append(SlotRecord(slot, "done", None, str(bench), None,
                                {"restarted": True, "restart_s": 4.0,
                                 "phases": {"loading": 3.0, "capture": 1.0}}, 1, 2))
    store.update(finished_at=store.read()["started_at"] + 40.0)
    return store.path


SPEEDS = {
    "baseline": {(1024, 1): [100, 102, 98], (4096, 8): [500, 505, 495]},
    "b8": {(1024, 1): [250, 252, 248], (4096, 8): [1100, 1110, 1090]},
    "b16": {(1024, 1): [260, 262, 258], (4096, 8): [900, 905, 895]},
}


def test_repeats_give_speedups_best_per_cell_and_overall(tmp_path):
    path = make_sweep(tmp_path, SPEEDS, repeats=3)
    report = build_report(read_sweep(path))
    assert report.reference == "baseline" and report.reference_is_baseline
    assert [c[:2] for c in report.cells] == [(1024, 1), (4096, 8)] and {c.prompts for c in report.cells} == {"story"}
    b8 = report.row("b8", (4096, 8))
    assert b8.repeats == 3 and b8.tok_s.mean == 1100 and b8.tok_s.method == "repeats"
    assert abs(b8.vs_reference.value - 2.2) < 1e-9 and b8.vs_reference.significant
    best = {b.cell[:2]: b for b in report.best_per_cell}
    assert best[(1024, 1)].config == "b16" and best[(1024, 1)].runner_up == "b8"
    assert best[(4096, 8)].config == "b8" and abs(best[(4096, 8)].margin.value - 1100 / 900) < 1e-9
    assert report.overall.config == "b8" and report.overall.runner_up == "b16"
    # geometric mean of b8/b16 over the two cells
    assert abs(report.overall.margin.value - ((250 / 260) * (1100 / 900)) ** 0.5) < 1e-9
    assert report.restarts.count == 9 and report.restarts.total_s == 36.0
    assert report.restarts.phases_mean_s == {"loading": 3.0, "capture": 1.0}


def test_single_runs_take_intervals_from_per_request_variation(tmp_path):
    report = build_report(read_sweep(make_sweep(tmp_path, SPEEDS)))
    row = report.row("b8", (1024, 1))
    assert row.tok_s.method == "requests" and row.tok_s.lo < 250 < row.tok_s.hi
    assert row.acceptance.mean == 3.5
    assert row.ttft_p50.lo is None  # percentiles from one run: no interval claimed


def test_failed_configuration_is_listed_with_its_reason(tmp_path):
    report = build_report(read_sweep(make_sweep(tmp_path, SPEEDS, failed=("b32",))))
    assert [(f.label, f.reason) for f in report.failures] == [("b32", "fatal log line: oom: CUDA out of memory")]
    assert "b32" not in report.configs
    text = to_markdown(report)
    assert "## failed configurations" in text and "b32 (run 1): fatal log line: oom" in text


def test_markdown_names_best_with_margin(tmp_path):
    text = to_markdown(build_report(read_sweep(make_sweep(tmp_path, SPEEDS, repeats=3))))
    assert "**Best overall: b8**, ahead of b16 by +" in text
    assert "best: **b8** (1100.0 tok/s), ahead of b16 by +22.2%" in text
    assert "| b8 | 3 | 1100.0 ±" in text and "x2.20 [" in text
    assert "9 restart(s), 36.0 s in all, median 4.0 s; 90% of the sweep's 40.0 s" in text


def test_csv_has_one_row_per_config_and_cell(tmp_path):
    text = to_csv(build_report(read_sweep(make_sweep(tmp_path, SPEEDS, repeats=3))))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 6
    b8 = next(r for r in rows if r["config"] == "b8" and r["context"] == "4096")
    assert float(b8["tok_s"]) == 1100 and float(b8["tok_s_lo"]) < 1100 < float(b8["tok_s_hi"])
    assert b8["best_in_cell"] == "1" and abs(float(b8["vs_reference"]) - 2.2) < 1e-6


def test_json_document(tmp_path):
    doc = to_json(build_report(read_sweep(make_sweep(tmp_path, SPEEDS, repeats=3))))
    assert doc["best_overall"]["config"] == "b8"
    assert doc["best_overall"]["margin"]["significant"] is True
    assert {c["config"] for c in doc["cells"]} == {"baseline", "b8", "b16"}
    json.dumps(doc)  # serialisable


def test_without_baseline_the_first_config_is_the_reference(tmp_path):
    speeds = {k: v for k, v in SPEEDS.items() if k != "baseline"}
    report = build_report(read_sweep(make_sweep(tmp_path, speeds)))
    assert report.reference == "b8" and not report.reference_is_baseline
    assert abs(report.row("b16", (4096, 8)).vs_reference.value - 900 / 1100) < 1e-9
    assert "ratio vs b8" in to_markdown(report)


def test_separate_bench_runs_of_one_config_are_repeats(tmp_path):
    path = make_sweep(tmp_path, SPEEDS, repeats=3)
    dirs = sorted(str(p / "bench") for p in path.iterdir() if (p / "bench").is_dir() and "b8" in p.name)
    inputs = load_inputs(dirs)
    assert [(r.label, r.repeat) for r in inputs.runs] == [("b8", 1), ("b8", 2), ("b8", 3)]
    assert build_report(inputs).row("b8", (4096, 8)).tok_s.method == "repeats"


def test_bench_out_json_file_is_accepted(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"run": {"server": {"knobs": {"budget": 8, "topk": 4, "window": None}}},
                             "cells": [cell(60, 1, 42.0)]}))
    report = build_report(load_inputs([str(f)]))
    assert report.configs == ("b8-t4-nowindow",) and report.row("b8-t4-nowindow", (60, 1)).tok_s.mean == 42.0


def test_reports_name_each_configurations_knob_values(tmp_path):
    """Issue 22 item 8: a report says what each configuration ran with, in every format."""
    path = make_sweep(tmp_path, SPEEDS)
    report = build_report(load_inputs([str(path)]))
    md = to_markdown(report)
    assert "| b8 | budget=8 |" in md and "| baseline | speculation off |" in md
    assert to_json(report)["knobs"] == {"baseline": {}, "b8": {"budget": 8}, "b16": {"budget": 8}}
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert {r["config"]: r["knobs"] for r in rows}["b8"] == "budget=8"
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"run": {"server": {"knobs": {"budget": 8, "topk": 4, "window": None}}},
                             "cells": [cell(60, 1, 42.0)]}))
    assert "| b8-t4-nowindow | budget=8 topk=4 window=none |" in to_markdown(build_report(load_inputs([str(f)])))


def test_wilson_interval():
    lo, hi = wilson(8, 10)
    assert 0.490 < lo < 0.491 and 0.943 < hi < 0.944  # textbook: 0.490-0.943
    assert wilson(0, 0) == (0.0, 1.0)


def test_cli_formats_and_errors(tmp_path):
    path = make_sweep(tmp_path, SPEEDS, repeats=3)
    md = run_cli("report", str(path))
    assert md.returncode == 0 and "Best overall: b8" in md.stdout
    js = run_cli("report", str(path), "--format", "json")
    assert js.returncode == 0 and json.loads(js.stdout)["best_overall"]["config"] == "b8"
    flag = run_cli("report", str(path), "--json")  # the contract's flag (issue 22 item 8)
    assert flag.returncode == 0 and json.loads(flag.stdout) == json.loads(js.stdout)
    both = run_cli("report", str(path), "--json", "--format", "csv")
    assert both.returncode == 2 and "not allowed with" in both.stderr
    cs = run_cli("report", str(path), "--format", "csv")
    assert cs.returncode == 0 and cs.stdout.startswith("config,context,concurrency")
    missing = run_cli("report", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such run" in missing.stderr
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "run.json").write_text("{}")
    empty = run_cli("report", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "nothing to report" in empty.stderr


def _bad(path, match):
    with pytest.raises(UsageError) as info:
        load_inputs([str(path)])
    assert match in info.value.message and "\n" not in info.value.message, info.value.message
    return info.value


def test_binary_or_malformed_slots_name_the_file_and_line(tmp_path):
    path = make_sweep(tmp_path, {"b8": SPEEDS["b8"]})
    slots = path / "slots.jsonl"
    slots.write_bytes(b"\xff\xfe\x00binary")
    _bad(path, f"{slots}: not a UTF-8 text file")
    for line, match in [({"slot": 5}, "line 1: field 'slot': expected an object, got 5"),
                        ({"slot": {"config": "b8", "repeat": "x"}}, "line 1 slot: field 'repeat'"),
                        ({"slot": {"config": "b8"}, "status": "done"}, "needs 'bench_dir' or 'slot.key'"),
                        ({"slot": {"config": "b8"}, "server": {"restarted": True, "restart_s": "4"}},
                         "line 1 server: field 'restart_s'"),
                        ({"slot": {"config": "b8"}, "server": {"phases": {"x": None}}}, "server phases: field 'x'")]:
        slots.write_text(json.dumps(line) + "\n")
        _bad(path, f"{slots} {match}" if match.startswith("line") else match)


def test_torn_and_non_object_lines_are_skipped(tmp_path):
    path = make_sweep(tmp_path, {"b8": SPEEDS["b8"]})
    slots = path / "slots.jsonl"
    slots.write_text('[1]\n"s"\n' + slots.read_text() + '{"slot": {"con')
    assert len(read_sweep(path).runs) == 1


def test_malformed_cells_and_sweep_json_name_the_field(tmp_path):
    path = make_sweep(tmp_path, {"b8": SPEEDS["b8"]})
    bench = next(path.glob("*/bench"))
    cells = bench / "cells.jsonl"
    good = cells.read_text()
    for row, match in [({"context": "a", "concurrency": 1}, "field 'context': expected an integer, got \"a\""),
                       ({"concurrency": 1}, "field 'context': expected an integer, got null"),
                       ({"context": 1, "concurrency": 1, "output_tok_s": float("nan")}, "field 'output_tok_s'"),
                       ({"context": 1, "concurrency": 1, "ttft_ms": {"p50": "x"}}, "ttft_ms: field 'p50'"),
                       ({"context": 1, "concurrency": 1, "verdicts": {"pass": -1}}, "verdicts: field 'pass'")]:
        cells.write_text(good + json.dumps(row) + "\n")
        _bad(path, f"{cells} line 3")
        _bad(path, match)
    cells.write_text(good)
    (bench / "responses.jsonl").write_text('{"output_tokens": "many"}\n')
    _bad(path, "responses.jsonl line 1: field 'output_tokens'")
    for doc, match in [({"plan": 5}, "field 'plan': expected an object"),
                       ({"plan": {"configs": [5]}}, "configs[0]: config: expected an object"),
                       ({"plan": {"configs": [{}]}}, "configs[0]: field 'name'"),
                       ([], "document: expected an object, got []")]:
        (path / "sweep.json").write_text(json.dumps(doc))
        _bad(path, f"{path / 'sweep.json'}")
        _bad(path, match)


def test_binary_run_files_exit_2_without_a_traceback(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"kind": "bench"}')
    (run / "cells.jsonl").write_bytes(bytes(range(256)))
    out = run_cli("report", str(run))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.splitlines()[0] == (f"ddtune: error: {run / 'cells.jsonl'}: not a UTF-8 text file "
                                          "(binary or not UTF-8; bad byte at offset 128)")


def test_extreme_but_finite_numbers_still_render(tmp_path):
    """1e300 next to 1e-300 overflowed ``** 2`` and ``math.exp`` into a traceback."""
    folders = []
    for i, speeds in enumerate([(1e300, 1e-300), (1e-300, 1.7e308)]):
        run = tmp_path / f"run{i}"
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"kind": "bench", "sweep": {"config": {"name": f"c{i}"}}}))
        (run / "cells.jsonl").write_text("".join(json.dumps(cell(1024, 1, v)) + "\n" for v in speeds))
        folders.append(str(run))
    report = build_report(load_inputs(folders))
    assert report.row("c0", (1024, 1)).repeats == 2 and report.overall is not None
    for render in (to_markdown, to_csv, to_json):
        assert render(report)


def test_integers_beyond_64_bits_are_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"kind": "bench"}')
    (run / "cells.jsonl").write_text('{"context": 1024, "concurrency": 1, "verdicts": {"pass": 1' + "0" * 400 + "}}\n")
    _bad(run, "verdicts: field 'pass': 1000")
    _bad(run, "is out of range (64-bit integers only)")


def test_a_label_names_only_the_knobs_that_are_set():
    """Issue 32: a plain DFlash config (no budget, no topk) was named 'b--t--w2048'."""
    from workloads.report.inputs import knob_label

    assert knob_label({"budget": None, "topk": None, "window": 2048}) == "window=2048"
    assert knob_label({"budget": None, "topk": None, "window": None, "block_size": 32}) == "block_size=32"
    assert knob_label({"budget": 8, "topk": None, "window": None}) == "budget=8"
    assert knob_label({"budget": 8, "topk": 4, "window": None}) == "b8-t4-nowindow"  # the preset naming stays

"""ddtune report on load runs (issue 22, item 4): their summary and windows, two of them side by side
with B/A, and a hint on an empty run that does not send the user to --resume a sweep that is not one."""

from __future__ import annotations

import json

from tests.helpers import run_cli


def load_run(root, name, tok_s, accept, windows=True, source=None, knobs=None):
    path = root / name
    path.mkdir(parents=True)
    summary = {"reason": "duration", "error": None, "elapsed_s": 60.0, "finished": 40, "errors": 1,
               "output_tokens": int(tok_s * 60), "output_tok_s": tok_s, "verdicts": {"pass": 30, "fail": 9},
               "cancelled": 0, "acceptance": {"total": accept, "source": "request", "tokens": 1, "verify_calls": 1},
               "run_dir": str(path)}
    if windows:
        summary |= {"token_count": "exact", "window_s": 5.0,
                    "windows": [{"t_s": 5.0 * (i + 1), "tok_s": tok_s + i, "acceptance": accept,
                                 "acceptance_source": "request"} for i in range(4)]}
    run = {"id": name, "kind": "load", "status": "done", "summary": summary,
           "server": {"knobs": knobs or {"budget": 8, "topk": 4, "window": 2048}}}
    if source:
        run["source"] = source
    (path / "run.json").write_text(json.dumps(run))
    (path / "responses.jsonl").write_text("")
    return path


def test_report_shows_a_load_runs_summary_and_windows(tmp_path):
    a = load_run(tmp_path, "20261130T090000Z-load", 1500.0, 5.5)
    out = run_cli("report", str(a))
    assert out.returncode == 0, out.stderr
    assert "## 20261130T090000Z-load: b8-t4-w2048" in out.stdout
    assert "| output tok/s | 1500.0 |" in out.stdout and "| acceptance (tokens / verify step) | 5.50 |" in out.stdout
    assert "| pass rate | 77% (fail 9, pass 30) |" in out.stdout
    assert "Windows of 5.0 s" in out.stdout and "| 20 | 1503.0 | 5.50 |" in out.stdout
    js = run_cli("report", str(a), "--format", "json")
    assert js.returncode == 0 and json.loads(js.stdout)["load_runs"][0]["summary"]["output_tok_s"] == 1500.0
    cs = run_cli("report", str(a), "--format", "csv")
    assert cs.returncode == 0 and cs.stdout.splitlines()[1] == "20261130T090000Z-load,b8-t4-w2048,5.0,1500.0,5.5"


def test_two_load_runs_compare_side_by_side(tmp_path):
    a = load_run(tmp_path, "20261130T090000Z-load", 1500.0, 5.5)
    b = load_run(tmp_path, "20261130T091500Z-load", 1650.0, 5.0, windows=False, source="console",
                 knobs={"budget": 8, "topk": 4, "window": 1024})
    out = run_cli("report", str(a), str(b))
    assert out.returncode == 0, out.stderr
    assert "compared on their summaries." in out.stdout  # B has no windows: no median-window row
    assert "| output tok/s (whole run) | 1500.0 | 1650.0 | 1.10x |" in out.stdout
    assert "| acceptance | 5.50 | 5.00 | 0.91x |" in out.stdout
    assert "No windows recorded (the console's load runs keep the summary only)." in out.stdout


def test_an_empty_bench_run_hints_at_bench_not_a_sweep_resume(tmp_path):
    path = tmp_path / "20261130T090000Z-bench"
    path.mkdir()
    (path / "run.json").write_text(json.dumps({"id": path.name, "kind": "bench", "status": "interrupted"}))
    out = run_cli("report", str(path))
    assert out.returncode == 2 and "nothing to report" in out.stderr
    assert "--resume" not in out.stderr and "a bench run reports once it has finished a cell" in out.stderr


def test_a_load_csv_keeps_its_columns_whatever_the_label(tmp_path):
    """Issue 28, item 8: a knob value with a comma, a quote and a line break lands in one quoted field
    (read back with csv.reader), in the file --out writes and on stdout alike."""
    import csv

    odd = 'a,b "q"\nc'
    a = load_run(tmp_path, "20261130T090000Z-load", 1500.0, 5.5, knobs={"budget": 8, "topk": 4, "window": 2048,
                                                                         "note": odd})
    b = load_run(tmp_path, "20261130T091500Z-load", 1650.0, 5.0, windows=False, source="console",
                 knobs={"budget": 8, "topk": 4, "window": 1024, "note": odd})
    target = tmp_path / "load.csv"
    out = run_cli("report", str(a), str(b), "--format", "csv", "--out", str(target))
    assert out.returncode == 0, out.stderr
    with open(target, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["run", "label", "t_s", "tok_s", "acceptance"]
    assert all(len(row) == 5 for row in rows), rows
    assert rows[1] == ["20261130T090000Z-load", f"b8-t4-w2048,note={odd}", "5.0", "1500.0", "5.5"]
    assert rows[-1] == ["20261130T091500Z-load", f"b8-t4-w1024,note={odd}", "", "1650.0", "5.0"]
    assert len(rows) == 1 + 4 + 1
    shown = run_cli("report", str(a), str(b), "--format", "csv")
    assert shown.returncode == 0 and list(csv.reader(shown.stdout.splitlines(keepends=True))) == rows

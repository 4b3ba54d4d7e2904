"""The results screen's run list: a run whose files are corrupt is left out, never a crash."""

import json

from workloads.report import list_runs
from workloads.report.past import compare


def test_corrupt_runs_are_left_out(state_dir):
    runs = state_dir / "runs"
    good = runs / "20260101T000000Z-bench"
    good.mkdir(parents=True)
    (good / "run.json").write_text(json.dumps({"id": good.name, "kind": "bench", "status": "done",
                                               "server": {"knobs": {"budget": 8}}}))
    (good / "cells.jsonl").write_text(json.dumps({"context": 1024, "concurrency": 1, "output_tok_s": None}) + "\n")
    for name, files in [("20260102T000000Z-bench", {"run.json": b"\xff\xfe", "cells.jsonl": b""}),
                        ("20260103T000000Z-bench", {"run.json": b"[]"}),
                        ("20260104T000000Z-bench", {"run.json": b'{"server": 5}', "cells.jsonl": b"\x80\n"}),
                        ("20260105T000000Z-bench", {"run.json": b'{"server": 5}',
                                                    "cells.jsonl": b'{"context": "x"}\n'})]:
        (runs / name).mkdir()
        for file, data in files.items():
            (runs / name / file).write_bytes(data)
    (runs / "stray-file").write_text("x")
    rows = list_runs()
    assert [r.id for r in rows] == [good.name]
    assert rows[0].knobs == "budget=8" and rows[0].summary.startswith("1 cells, best 0 tok/s")
    assert compare(rows[0], rows[0]) == [("ctx 1024 c1", "0", "0", "-", "-", "-")]


def test_unset_knobs_are_left_out_of_the_knobs_column(state_dir):
    """Issue 32: a plain DFlash run read 'budget=None topk=None window=2048'."""
    run = state_dir / "runs" / "20260101T000000Z-load"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run.name, "kind": "load", "status": "done", "server": {
        "knobs": {"budget": None, "topk": None, "window": 2048}}}))
    [row] = list_runs()
    assert row.knobs == "window=2048"

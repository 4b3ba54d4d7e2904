"""Finding a saved no-speculation tok/s for the console's reference line: load runs and sweep baselines."""

import json
import socket
from pathlib import Path

import pytest

from workloads.live.baseline import find_no_spec_baseline

HOST = socket.gethostname()


def load_run(root: Path, name: str, tok_s: float, speculative: bool = False, model: str = "demo",
             concurrency: int = 8, host: str = HOST) -> Path:
    path = root / name
    path.mkdir(parents=True)
    doc = {"id": name, "kind": "load", "plan": {"concurrency": concurrency},
           "server": {"speculative": speculative, "server_info": {"model_path": model}},
           "host": {"hostname": host}, "summary": {"output_tok_s": tok_s}}
    (path / "run.json").write_text(json.dumps(doc))
    return path


def sweep(root: Path, name: str, cells: list[dict], model: str = "demo") -> Path:
    path = root / name
    bench = path / "00-baseline-r1" / "bench"
    bench.mkdir(parents=True)
    (bench / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    plan = {"configs": [{"name": "baseline", "knobs": {}, "baseline": True}, {"name": "b8", "knobs": {"budget": 8}}]}
    (path / "sweep.json").write_text(json.dumps({"id": name, "plan": plan, "model": model, "host": {"hostname": HOST}}))
    slot = {"slot": {"index": 0, "config": "baseline", "repeat": 1, "key": "00-baseline-r1"}, "status": "done",
            "bench_dir": str(bench)}
    (path / "slots.jsonl").write_text(json.dumps(slot) + "\n")
    return path


def cell(context: int, concurrency: int, tok_s: float) -> dict:
    return {"context": context, "concurrency": concurrency, "output_tok_s": tok_s, "requests": 8, "errors": 0}


def test_the_newest_no_spec_load_run_of_this_model_and_concurrency(tmp_path):
    load_run(tmp_path, "20261101T000000Z-load", 480.0)
    load_run(tmp_path, "20261102T000000Z-load", 512.0)
    load_run(tmp_path, "20261103T000000Z-load", 900.0, speculative=True)   # speculative: not a baseline
    load_run(tmp_path, "20261104T000000Z-load", 300.0, concurrency=32)     # another concurrency
    load_run(tmp_path, "20261105T000000Z-load", 200.0, model="other")      # another model
    load_run(tmp_path, "20261106T000000Z-load", 100.0, host="elsewhere")   # another machine
    (tmp_path / "20261107T000000Z-load").mkdir()
    (tmp_path / "20261107T000000Z-load" / "run.json").write_text("{torn")  # passed over
    found = find_no_spec_baseline({"demo"}, 8, root=tmp_path)
    assert found is not None and found.tok_s == 512.0 and found.source == "load run 20261102T000000Z-load"


def test_a_sweep_baseline_at_the_load_concurrency(tmp_path):
    load_run(tmp_path, "20261101T000000Z-load", 480.0)
    sweep(tmp_path, "20261102T000000Z-sweep", [cell(1024, 8, 600.0), cell(60, 8, 640.0), cell(60, 1, 90.0)])
    found = find_no_spec_baseline({"demo"}, 8, root=tmp_path)
    assert found is not None and found.tok_s == pytest.approx(640.0) and found.source.startswith("sweep ")
    assert find_no_spec_baseline({"demo"}, 1, root=tmp_path).tok_s == pytest.approx(90.0)


def test_none_known_is_none(tmp_path):
    load_run(tmp_path, "20261101T000000Z-load", 900.0, speculative=True)
    assert find_no_spec_baseline({"demo"}, 8, root=tmp_path) is None
    assert find_no_spec_baseline({"demo"}, 8, root=tmp_path / "missing") is None

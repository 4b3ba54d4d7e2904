"""The results store: atomic run.json, durable cells, torn lines ignored."""

import json

from workloads.results import RunStore


def test_store_round_trip_and_torn_line(tmp_path):
    store = RunStore.create("bench", {"plan": {"contexts": [60]}}, root=tmp_path)
    assert store.path.parent == tmp_path and store.path.name.endswith("-bench")
    store.append_response({"problem": "fib", "content": "x"})
    store.append_cell({"context": 60, "concurrency": 1})
    with open(store.cells_file, "a") as fh:
        fh.write('{"context": 1024, "conc')  # a crash mid-write
    store.update_run(status="done")
    store.close()
    again = RunStore(store.path)
    assert again.cells() == [{"context": 60, "concurrency": 1}]
    assert again.responses() == [{"problem": "fib", "content": "x"}]
    run = json.loads((store.path / "run.json").read_text())
    assert run["status"] == "done" and run["schema"] == "ddtune.run/1" and run["plan"] == {"contexts": [60]}
    assert RunStore.latest("bench", root=tmp_path) == store.path
    assert RunStore.latest("eval", root=tmp_path) is None


def test_two_runs_in_the_same_second_get_distinct_dirs(tmp_path):
    a = RunStore.create("eval", {}, root=tmp_path)
    b = RunStore.create("eval", {}, root=tmp_path)
    assert a.path != b.path

"""The results store: atomic run.json, durable cells, torn lines ignored."""

import json

from workloads.runs.store import RunStore


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
    assert again.cells() == [{"context": 60, "concurrency": 1, "attempt": 1}]
    assert again.responses() == [{"problem": "fib", "content": "x", "attempt": 1}]
    run = json.loads((store.path / "run.json").read_text())
    assert run["status"] == "done" and run["schema"] == "ddtune.run/1" and run["plan"] == {"contexts": [60]}
    assert RunStore.latest("bench", root=tmp_path) == store.path
    assert RunStore.latest("eval", root=tmp_path) is None


def test_two_runs_in_the_same_second_get_distinct_dirs(tmp_path):
    a = RunStore.create("eval", {}, root=tmp_path)
    b = RunStore.create("eval", {}, root=tmp_path)
    assert a.path != b.path


def test_resume_cuts_a_torn_tail_so_the_next_record_stays_readable(tmp_path):
    store = RunStore.create("bench", {}, root=tmp_path)
    store.append_cell({"context": 60, "concurrency": 1})
    store.close()
    with open(store.cells_file, "a") as fh:
        fh.write('{"context": 1024, "conc')  # killed mid-write
    with open(store.responses_file, "a") as fh:
        fh.write('{"problem": null, "context": 1024}')  # a whole record, killed before its newline
    again = RunStore(store.path)
    again.resume()
    again.append_cell({"context": 1024, "concurrency": 1})
    again.append_response({"problem": None, "context": 1024})
    again.close()
    lines = store.cells_file.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"context": 60, "concurrency": 1, "attempt": 1},
                                                    {"context": 1024, "concurrency": 1, "attempt": 2}]
    assert [json.loads(line) for line in store.responses_file.read_text().splitlines()] == [
        {"problem": None, "context": 1024}, {"problem": None, "context": 1024, "attempt": 2}]
    run = again.read_run()
    assert [a["id"] for a in run["attempts"]] == [1, 2] and len(run["resumed_at"]) == 1


def _stale(root, name, status="running", **writer):
    """A run directory whose run.json says ``status`` and whose last attempt claims ``writer``."""
    import socket

    path = root / name
    path.mkdir()
    store = RunStore(path)
    attempt = {"id": 1, "pid": 0, "create_time": 0.0, "host": socket.gethostname(), "started_at": 0.0}
    store.write_run({"schema": "ddtune.run/1", "kind": "bench", "id": name, "status": status,
                     "attempts": [{**attempt, **writer}]})
    return store


def test_running_runs_whose_writer_is_gone_are_marked_interrupted(tmp_path):
    import os
    import socket
    import subprocess
    import sys

    import psutil

    from workloads.runs.store import mark_interrupted_runs

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone_start = psutil.Process(gone.pid).create_time()
    gone.wait()
    me = psutil.Process()
    dead = _stale(tmp_path, "dead", pid=gone.pid, create_time=gone_start)
    reused = _stale(tmp_path, "reused", pid=os.getpid(), create_time=me.create_time() - 3600)  # same pid, older process
    alive = _stale(tmp_path, "alive", pid=os.getpid(), create_time=me.create_time())
    elsewhere = _stale(tmp_path, "elsewhere", pid=gone.pid, create_time=gone_start, host=socket.gethostname() + "-x")
    old = _stale(tmp_path, "old")
    old.write_run({k: v for k, v in old.read_run().items() if k != "attempts"})  # an older ddtune's run
    finished = _stale(tmp_path, "finished", status="done", pid=gone.pid, create_time=gone_start)
    sweep = _stale(tmp_path, "sweep", pid=gone.pid, create_time=gone_start)
    sweep.run_file.rename(sweep.path / "sweep.json")  # a sweep manifest, with a slot's bench run inside
    (sweep.path / "00-b8-r1").mkdir()
    slot = _stale(sweep.path / "00-b8-r1", "bench", pid=gone.pid, create_time=gone_start)

    assert sorted(mark_interrupted_runs(tmp_path)) == sorted([dead.path, reused.path, sweep.path, slot.path])
    assert json.loads((sweep.path / "sweep.json").read_text())["status"] == "interrupted"
    for store in (dead, reused, slot):
        run = store.read_run()
        assert run["status"] == "interrupted" and "ended without recording an end" in run["error"]
    for store, status in ((alive, "running"), (elsewhere, "running"), (old, "running"), (finished, "done")):
        assert store.read_run()["status"] == status, store.path
    # The next run started in that folder does the same on its own.
    again = _stale(tmp_path, "again", pid=gone.pid, create_time=gone_start)
    RunStore.create("eval", {}, root=tmp_path)
    assert again.read_run()["status"] == "interrupted"


def test_resume_refuses_a_run_another_live_process_still_writes(tmp_path):
    import subprocess
    import sys

    import psutil
    import pytest

    from backends.core.errors import UsageError

    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        store = _stale(tmp_path, "busy", pid=writer.pid, create_time=psutil.Process(writer.pid).create_time())
        with pytest.raises(UsageError, match=f"still being written by process {writer.pid}"):
            RunStore(store.path).resume()
        assert len(store.read_run()["attempts"]) == 1
    finally:
        writer.kill()
        writer.wait()
    RunStore(store.path).resume()
    assert store.read_run()["status"] == "running" and len(store.read_run()["attempts"]) == 2


def test_kept_filter_keeps_only_the_attempt_whose_cell_was_written(tmp_path):
    from workloads.runs.store import kept_filter

    store = RunStore.create("bench", {}, root=tmp_path)
    store.append_response({"kind": "bench", "context": 60, "concurrency": 1, "problem": "fib"})
    store.append_cell({"context": 60, "concurrency": 1})
    store.append_response({"kind": "bench", "context": 200, "concurrency": 1, "problem": "fib"})  # killed here
    store.close()
    resumed = RunStore(store.path)
    resumed.resume()
    resumed.append_response({"kind": "bench", "context": 200, "concurrency": 1, "problem": "gcd"})
    resumed.append_cell({"context": 200, "concurrency": 1})
    resumed.append_response({"kind": "bench", "context": 400, "concurrency": 1, "problem": "gcd"})  # unfinished
    resumed.close()
    kept = kept_filter(store.path)
    assert [(r["context"], r["attempt"]) for r in store.responses() if kept(r)] == [(60, 1), (200, 2)]
    assert kept({"kind": "load", "problem": "fib", "attempt": 9})
    assert kept_filter(tmp_path) is None  # no run.json there


def test_answers_holding_unicode_line_breaks_read_back_whole(tmp_path):
    store = RunStore.create("eval", {}, root=tmp_path)
    record = {"problem": "fib", "content": "a\u2028b\x85c\x1cd\re"}
    store.append_response(record)
    store.close()
    assert store.responses() == [{**record, "attempt": 1}]

"""DirWatch: the kernel's word (inotify) that a state file changed, and the stat fallback."""

from __future__ import annotations

import os

import pytest

from backends.record import watch as statewatch
from backends.record.watch import DirWatch


@pytest.fixture(params=["inotify", "stat"])
def kind(request, monkeypatch):
    if request.param == "stat":
        monkeypatch.setattr(statewatch, "_libc", lambda: None)  # as on a system without inotify
    return request.param


async def test_reports_writes_replaces_and_deletes_of_watched_names_only(tmp_path, kind):
    target = tmp_path / "server.json"
    with DirWatch(tmp_path, {"server.json"}, fallback_s=0.05) as watch:
        assert watch.kind == kind
        (tmp_path / "other.txt").write_text("x")
        assert await watch.wait(0.3) == set()
        tmp = tmp_path / "server.json.tmp"
        tmp.write_text('{"pid": 1}')
        os.replace(tmp, target)                      # how save_state writes
        assert await watch.wait(2.0) == {"server.json"}
        target.unlink()                              # clear_state
        assert await watch.wait(2.0) == {"server.json"}
        assert await watch.wait(0.2) == set()        # nothing more happened


async def test_tail_follows_a_quiet_then_busy_file(tmp_path, kind):
    from backends.drivers.base import tail_file

    log = tmp_path / "server.log"
    log.write_text("one\n")
    lines = tail_file(log, from_start=True, poll=0.05)
    assert await anext(lines) == "one"
    with log.open("a") as fh:
        fh.write("two\nthree\n")
    assert [await anext(lines), await anext(lines)] == ["two", "three"]
    await lines.aclose()

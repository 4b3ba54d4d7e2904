"""A session's RecordFile: the server.json it wrote is its own, known without reading it; anything else
there is another process's doing, which is all the session's watcher reacts to (no counter of
commands in flight)."""

import time

from backends.record.state import ServerState
from backends.server.record import RecordFile, clear_state, load_state, save_state


def record(port: int = 30000, phase: str = "ready") -> ServerState:
    return ServerState(backend="sim", pid=None, pgid=None, host="127.0.0.1", port=port,
                       url=f"http://127.0.0.1:{port}", config_hash="x", knobs={"window": 2048}, log_path=None,
                       started_at=time.time(), phase=phase)


def test_its_own_writes_and_removals_are_no_change(state_dir):
    pen = RecordFile()
    pen.save(record(phase="starting"))
    assert pen.changed() == (False, None)
    pen.save(record())
    assert pen.changed() == (False, None) and load_state().phase == "ready"
    pen.clear()
    assert pen.changed() == (False, None) and load_state() is None


def test_another_writer_is_a_change_seen_once(state_dir):
    pen = RecordFile()
    pen.save(record())
    save_state(record(port=31000))  # the module's own writer: another ddtune's, for this pen
    changed, now = pen.changed()
    assert changed and now is not None and now.port == 31000
    assert pen.changed() == (False, None)  # the same content again is no news
    clear_state()
    assert pen.changed() == (True, None)


def test_a_corrupt_record_from_elsewhere_is_set_aside_once(state_dir):
    pen, notes = RecordFile(), []
    pen.save(record())
    (state_dir / "server.json").write_text("{torn")
    assert pen.changed(notes.append) == (True, None)
    assert notes and "is corrupt" in notes[0] and not (state_dir / "server.json").exists()
    assert pen.changed(notes.append) == (False, None) and len(notes) == 1  # its removal was this pen's


def test_its_own_file_is_known_without_reading_it(state_dir, monkeypatch):
    import backends.server.record as record_io

    pen = RecordFile()
    pen.save(record())
    monkeypatch.setattr(record_io, "_read", lambda note: (_ for _ in ()).throw(AssertionError("read")))
    assert pen.changed() == (False, None)


def test_a_pen_that_wrote_nothing_takes_everything_as_news(state_dir):
    save_state(record())
    changed, now = RecordFile().changed()
    assert changed and now is not None and now.phase == "ready"

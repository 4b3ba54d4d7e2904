"""backends.core.writes, the one writer of every file (issue 28, item 1), on real files as root: the
append-opener behind ``slots.jsonl``/``responses.jsonl``/``rounds.jsonl`` and the run logs, the atomic
replace behind every manifest and record, and the stores that use them. The CLI's side of the same
attacks: tests/workloads/test_out_links.py."""

from __future__ import annotations

import json
import os
import stat

import pytest

from backends.core.statefs import STATE, UntrustedState, append_line
from backends.core.writes import (OUTPUT, UnsafeOutput, WriteFailed, append_text, check_folder, open_append,
                                  write_atomic)
from workloads.runs.store import RunStore
from workloads.search.store import SearchStore
from workloads.sweep.plan import Slot, SlotRecord, SweepStore

SPARE = 65534
VICTIM = b"root:x:0:0:root:/root:/bin/bash\n"


@pytest.fixture
def hit(tmp_path):
    path = tmp_path / "victim"
    path.write_bytes(VICTIM)
    return path


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "out"
    path.mkdir(mode=0o700)
    return path


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_replace_is_whole_fsynced_and_leaves_no_temp(folder):
    target = folder / "doc.json"
    target.write_text("old")
    target.chmod(0o664)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and leftovers(folder) == []
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # its mode, less group/other write
    write_atomic(folder / "state.json", b"x", STATE)
    assert stat.S_IMODE((folder / "state.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("how", ["symlink", "hardlink", "fifo", "other-owner"])
def test_append_refuses_what_is_not_a_plain_file_of_ours(folder, hit, how):
    target = folder / "slots.jsonl"
    if how == "symlink":
        target.symlink_to(hit)
    elif how == "hardlink":
        os.link(hit, target)
    elif how == "fifo":
        os.mkfifo(target)  # an open for writing would block with no reader: never opened
    else:
        target.write_bytes(VICTIM)
        os.chown(target, SPARE, SPARE)
    with pytest.raises(UnsafeOutput) as err:
        append_text(target, "line\n")
    assert str(target) in err.value.message
    assert hit.read_bytes() == VICTIM
    if how == "other-owner":
        assert target.read_bytes() == VICTIM


def test_append_makes_a_new_file_exclusively_and_then_appends(folder):
    target = folder / "responses.jsonl"
    append_text(target, "a\n")
    append_text(target, "b\n")
    assert target.read_text() == "a\nb\n" and os.stat(target).st_nlink == 1


def test_a_missing_file_is_not_made_when_only_an_existing_one_may_be_extended(folder):
    with pytest.raises(FileNotFoundError):
        open_append(folder / "cells.jsonl", create=False, read=True)
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("mode,uid,ok", [(0o777, 0, False), (0o775, 0, False), (0o1777, 0, True),
                                         (0o1777, SPARE, False), (0o755, SPARE, False), (0o700, 0, True)])
def test_the_folder_rule(tmp_path, mode, uid, ok):
    """Writable by group or others only with the sticky bit; owned by root or us."""
    folder = tmp_path / "f"
    folder.mkdir()
    os.chown(folder, uid, uid)
    folder.chmod(mode)
    if ok:
        write_atomic(folder / "x", "1")
        append_text(folder / "y", "1")
        check_folder(folder)
        return
    for write in (lambda: write_atomic(folder / "x", "1"), lambda: append_text(folder / "y", "1"),
                  lambda: check_folder(folder / "later")):
        with pytest.raises(UnsafeOutput) as err:
            write()
        assert f"folder {folder} " in err.value.message
    assert list(folder.iterdir()) == []


def test_a_folder_above_that_another_user_rules_is_refused(tmp_path):
    parent = tmp_path / "theirs"
    parent.mkdir()
    (parent / "ours").mkdir()
    os.chown(parent, SPARE, SPARE)
    with pytest.raises(UnsafeOutput) as err:
        write_atomic(parent / "ours" / "x.json", "{}")
    assert f"folder {parent} is owned by uid {SPARE}" in err.value.message
    assert list((parent / "ours").iterdir()) == []


def test_write_errors_are_one_line_with_a_fix(tmp_path):
    with pytest.raises(WriteFailed) as err:
        write_atomic(tmp_path / "missing" / "x.json", "{}")
    assert err.value.exit_code == 2 and "No such file or directory" in err.value.message


def test_the_state_dir_keeps_its_own_rules(tmp_path, hit):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "startups.jsonl").symlink_to(hit)
    with pytest.raises(UntrustedState) as err:
        append_line(state / "startups.jsonl", "{}\n")
    assert "state file" in err.value.message and "symbolic link" in err.value.message
    os.unlink(state / "startups.jsonl")
    append_line(state / "startups.jsonl", "{}\n")
    assert stat.S_IMODE((state / "startups.jsonl").stat().st_mode) == 0o600
    state.chmod(0o770)  # the state dir allows no group write, sticky or not
    with pytest.raises(UntrustedState):
        write_atomic(state / "server.json", b"{}", STATE)
    assert hit.read_bytes() == VICTIM and OUTPUT.walk and not STATE.walk


def test_stores_refuse_links_planted_in_a_folder_of_ours(folder, hit):
    """A resumed sweep, search or run whose JSONL is a link: refused, never appended to or cut."""
    (folder / "slots.jsonl").symlink_to(hit)
    (folder / "rounds.jsonl").symlink_to(hit)
    (folder / "responses.jsonl").symlink_to(hit)
    (folder / "cells.jsonl").symlink_to(hit)
    record = SlotRecord(Slot(0, "b8-t4-w2048", 0), "done", None, None, None, {}, 0.0, 0.0)
    for write in (lambda: SweepStore(folder).append(record), lambda: SearchStore(folder).append_round({}),
                  lambda: RunStore(folder).append_response({"kind": "bench"}),
                  lambda: RunStore(folder).append_cell({"context": 60})):
        with pytest.raises(UnsafeOutput):
            write()
    store = RunStore(folder)
    store.run_file.write_text(json.dumps({"kind": "bench", "status": "interrupted"}))
    with pytest.raises(UnsafeOutput):
        store.resume()  # the torn-tail repair would truncate the victim
    assert hit.read_bytes() == VICTIM


def test_a_systemd_drop_in_is_never_written_through_a_link(tmp_path, hit):
    from backends.drivers.systemd import SystemdDriver

    link = tmp_path / "ddtune.conf"
    link.symlink_to(hit)
    with pytest.raises(UnsafeOutput):
        SystemdDriver._write_dropin(link, "[Service]\n")
    assert hit.read_bytes() == VICTIM
    made = tmp_path / "unit.d" / "ddtune.conf"
    SystemdDriver._write_dropin(made, "[Service]\n")
    assert stat.S_IMODE(made.stat().st_mode) == 0o600 and made.read_text() == "[Service]\n"

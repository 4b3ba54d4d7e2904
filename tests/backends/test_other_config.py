"""Issue 32: a lifecycle command for config B never stops config A's server without asking.

Two real simulator servers' configs in one state dir: A's server is started; B's ``up`` and
``restart`` refuse (exit 2), naming A's server and config and how to replace it, and leave it
running; ``--replace`` is the asking. The CLI runs in-process: the process itself is not the subject."""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from backends.knobs.config import load_config
from backends.core.phase import Phase
from backends.server.events import CommandRefused
from backends.server.status import StatusChanged, StatusFeed
from backends.server.lifecycle import OtherConfigRuns
from backends.server.session import ServerSession
from tests.backends.lifecycle_support import read_state, write_config
from tui import cli


def ddtune(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, err.getvalue()


def test_a_second_config_s_up_and_restart_refuse_and_leave_the_first_server_running(tmp_path, state_dir, groups):
    a, b = write_config(tmp_path, name="a.toml"), write_config(tmp_path, name="b.toml")
    code, out = ddtune("--config", str(a), "up")
    first = groups.track_state()
    assert code == 0, out
    for command in (("up",), ("restart", "--set", "window=1024"), ("up", "--apply-config")):
        code, out = ddtune("--config", str(b), *command)
        assert code == 2, (command, out)
        assert f"pid {first['pid']} (sim, ready) runs another config, {a}; not stopping it for {b}" in out
        assert f"`ddtune --config {b} up --replace`" in out and "stopping old server" not in out
        now = read_state(state_dir)
        assert (now["pid"], now["phase"], now["config_source"]) == (first["pid"], "ready", str(a))
        os.kill(first["pid"], 0)  # still running

    code, out = ddtune("--config", str(b), "up", "--replace")
    replaced = groups.track_state()
    assert code == 0, out
    assert f"stopping old server pid {first['pid']}" in out
    assert replaced["pid"] != first["pid"] and replaced["config_source"] == str(b)
    assert ddtune("--config", str(b), "down")[0] == 0


async def test_the_same_file_by_another_name_is_the_same_config(tmp_path, state_dir, groups, monkeypatch):
    """The record keeps the file's real path: a relative --config from another directory, or a
    link to it, is the same config (restarted as asked), not another one (refused)."""
    a = write_config(tmp_path, name="a.toml")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.toml").symlink_to(a)
    monkeypatch.chdir(tmp_path / "sub")
    session = ServerSession(load_config("link.toml"), stream_log=False)
    try:
        first = await session.up()
        groups.track(first.pgid)
        assert first.config_source == str(a)
        monkeypatch.chdir(tmp_path)
        other = ServerSession(load_config("a.toml"), stream_log=False)
        second = await other.restart(knobs={"window": 1024})
        groups.track(second.pgid)
        assert second.phase == "ready" and second.pid != first.pid
        await other.close()
    finally:
        await session.stop()
        await session.close()


async def test_the_session_refuses_as_an_event_and_stops_nothing(tmp_path, state_dir, groups):
    """What the console's dialog is built on: the refusal carries the running server's record."""
    a, b = write_config(tmp_path, name="a.toml"), write_config(tmp_path, name="b.toml")
    first_session = ServerSession(load_config(a), stream_log=False)
    second = ServerSession(load_config(b), stream_log=False)
    refused: list = []
    second.subscribe(lambda e: refused.append(e) if isinstance(e, CommandRefused) else None)
    shown: list = []
    feed = StatusFeed(second, shown.append)  # the console's reader of the session
    try:
        first = await first_session.up()
        groups.track(first.pgid)
        with pytest.raises(OtherConfigRuns) as caught:
            await second.up(keep_running_knobs=True)
        assert caught.value.state.pid == first.pid and caught.value.theirs == str(a)
        assert caught.value.exit_code == 2 and len(refused) == 1
        assert refused[0].other is not None and refused[0].other.pid == first.pid
        change = shown[-1]
        assert isinstance(change, StatusChanged) and change.other_config == refused[0].other
        assert change.status.phase == Phase.FAILED and change.status.fatal == caught.value.message
        assert change.said == f"{caught.value.message} ({caught.value.hint})"
        assert await feed.attempt(second.up()) is None  # refused again, said again, raised no more
        assert isinstance(shown[-1], StatusChanged) and shown[-1].other_config is not None
        assert read_state(state_dir)["pid"] == first.pid
    finally:
        await second.close()
        await first_session.stop()
        await first_session.close()

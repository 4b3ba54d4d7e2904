"""Readiness probes against a real simulator: socket owner by psutil, a real 1-token generation."""

import os
import socket

import pytest

from backends.launch.readiness import ReadinessProbe, owner_check
from backends.knobs.serverhelp import fetch_help
from tests.backends.lifecycle_support import config, headless


@pytest.fixture
async def server(tmp_path, state_dir, groups):
    state = await headless(config(tmp_path)).up()
    groups.track(state.pgid)
    assert state.phase == "ready", state.reason
    return state


async def test_probe_ready_for_our_pid_costs_one_generation(server):
    async with ReadinessProbe(server.url, server.port, server.pid) as probe:
        result = await probe.probe()
    assert result.ready and result.generated >= 1 and result.owner_pid == server.pid
    assert probe.generations == 1


async def test_probe_refuses_a_server_we_did_not_start_without_generating(server):
    other = 99_999_999  # a pid that is not the server nor one of its ancestors
    async with ReadinessProbe(server.url, server.port, other) as probe:
        result = await probe.probe()
    assert not result.ready and result.owner_pid == server.pid
    assert f"pid {server.pid}" in result.reason and f"(pid {other})" in result.reason
    assert probe.generations == 0


async def test_probe_without_pid_for_an_endpoint(server):
    async with ReadinessProbe(server.url, None, None) as probe:
        result = await probe.probe()
    assert result.ready


async def test_nothing_listening_is_not_ready():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = owner_check(port, 1)
    assert result is not None and not result.ready and "nothing listens" in result.reason
    async with ReadinessProbe(f"http://127.0.0.1:{port}", None, None) as probe:
        result = await probe.probe()
    assert not result.ready and result.unreachable
    assert result.reason == f"connection refused at http://127.0.0.1:{port}"


def test_sglang_help_is_cached_per_version(tmp_path, state_dir):
    session = headless(config(tmp_path, backend="sglang"))
    first = session.backend.learn_help()
    assert first.version == "0.5.23" and not first.cached
    assert "--speculative-draft-window-size" in first.text
    assert (state_dir / "help" / "sglang-0.5.23.txt").read_text() == first.text
    second = session.backend.learn_help()
    assert second.cached and second.text == first.text


def test_help_of_a_broken_interpreter_names_the_fix(tmp_path, state_dir):
    from backends.core.errors import ServerError

    with pytest.raises(ServerError) as info:
        fetch_help((str(tmp_path / "no-python"), "-m", "sglang.launch_server"), dict(os.environ), None)
    assert "not found" in info.value.message and "[server] python" in info.value.hint


@pytest.mark.parametrize("make", ["directory", "not executable", "fails"])
def test_help_of_an_interpreter_that_cannot_run_is_one_line(tmp_path, state_dir, make):
    """A directory or a non-executable file raised PermissionError past the FileNotFoundError
    handler; a failing --help put its stderr lines into a multi-line error."""
    from backends.core.errors import ServerError

    python = tmp_path / "python"
    if make == "directory":
        python.mkdir()
    else:
        python.write_text("#!/bin/sh\necho one >&2\necho two >&2\nexit 3\n")
        python.chmod(0o755 if make == "fails" else 0o644)
    with pytest.raises(ServerError) as info:
        fetch_help((str(python), "-m", "sglang.launch_server"), dict(os.environ), None)
    assert "\n" not in info.value.message and "[server] python" in info.value.hint
    if make == "fails":
        assert info.value.message.endswith("failed (exit 3): one | two")


def test_a_selftest_reads_the_help_this_sglang_printed_before(tmp_path, monkeypatch):
    """Issue 32: the selftest's temporary state dir is seeded with the --help the user's state dir holds,
    so this SGLang is not imported again to print it (and a state dir that is not there is not made)."""
    from backends.knobs.serverhelp import cached_helps, seed_helps

    mine, temporary = tmp_path / "mine", tmp_path / "temporary"
    monkeypatch.setenv("DDTUNE_STATE_DIR", str(mine))
    assert cached_helps() == {} and not mine.exists()
    (mine / "help").mkdir(parents=True, mode=0o700)
    mine.chmod(0o700)
    (mine / "help" / "sglang-0.5.17.txt").write_text("usage: launch_server --model-path ...")
    found = cached_helps()
    monkeypatch.setenv("DDTUNE_STATE_DIR", str(temporary))
    seed_helps(found)
    helptext = fetch_help((str(tmp_path / "no-such-python"), "-m", "sglang.launch_server"), {}, "0.5.17")
    assert helptext.cached and helptext.text == "usage: launch_server --model-path ..."  # nothing was run

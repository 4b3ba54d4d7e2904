"""The tmux driver on stand-ins (cat, sh, a Python prompt, a tiny Textual app): real tmux, real ptys.

No skips: without tmux these tests fail and say how to install it (.ci/run installs it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import psutil
import pytest

from tests.e2e.tmux import TmuxMissing, TmuxSession
from tests.helpers import REPO, ddtune_env
from tests.e2e.procs import STUBBORN_TREE, gone


def started_pids(tmux: TmuxSession) -> list[int]:
    screen = tmux.wait_for(re.compile(r"pids \d+ \d+ \d+"))
    return [int(p) for p in re.search(r"pids (\d+) (\d+) (\d+)", screen).groups()]


def test_cat_echoes_typed_text():
    with TmuxSession(["cat"]) as tmux:
        tmux.type_text("hello from tmux")
        tmux.send_keys("Enter")
        # once from the terminal's echo, once from cat itself
        screen = tmux.wait_for(re.compile(r"hello from tmux\nhello from tmux\n"))
    assert screen.splitlines()[:2] == ["hello from tmux", "hello from tmux"]


def test_python_prompt_reads_what_was_typed():
    prompt = "name = input('name? '); print('hello', name.upper()); input('press Enter to leave ')"
    with TmuxSession([sys.executable, "-c", prompt]) as tmux:
        tmux.wait_for("name?")  # capture-pane trims trailing spaces
        tmux.type_text("ddtune Enter")  # literal: the word Enter is typed, not pressed
        tmux.send_keys("Enter")
        screen = tmux.wait_for("hello DDTUNE ENTER")
        assert "press Enter to leave" in screen
        tmux.send_keys("Enter")
        assert tmux.wait_exit() == 0


def test_program_sees_terminal_env_size_cwd_and_given_env(tmp_path):
    script = 'echo "term=$TERM color=$COLORTERM lang=$LANG extra=$DDTUNE_E2E"; stty size; pwd; exec sleep 600'
    env = dict(os.environ, DDTUNE_E2E="passed", TERM="dumb")
    with TmuxSession(["sh", "-c", script], width=100, height=30, env=env, cwd=tmp_path) as tmux:
        screen = tmux.wait_for(str(tmp_path))
    lines = screen.splitlines()
    assert lines[0] == "term=xterm-256color color=truecolor lang=C.UTF-8 extra=passed"
    assert lines[1] == "30 100"
    assert len(lines) == 30


def test_resize_reaches_the_program():
    script = 'trap "stty size" WINCH; stty size; while :; do sleep 0.1; done'
    with TmuxSession(["sh", "-c", script], width=60, height=10) as tmux:
        tmux.wait_for("10 60")
        tmux.resize(90, 20)
        assert "20 90" in tmux.wait_for("20 90")


def test_wait_for_timeout_shows_the_last_screen():
    with TmuxSession(["cat"], width=50, height=6) as tmux:
        tmux.type_text("what the screen said")
        tmux.wait_for("what the screen said")
        with pytest.raises(AssertionError) as failure:
            tmux.wait_for(re.compile(r"never sh[o]wn"), timeout=0.5)
    message = str(failure.value)
    assert "'never sh[o]wn' to appear" in message
    assert "| what the screen said" in message
    assert "50x6" in message


def test_wait_gone_returns_the_screen_without_the_text():
    script = "printf 'busy\\n'; read line; clear; echo done; exec sleep 600"
    with TmuxSession(["sh", "-c", script]) as tmux:
        tmux.wait_for("busy")
        tmux.send_keys("Enter")
        assert "busy" not in tmux.wait_gone("busy")
        tmux.wait_for("done")
        with pytest.raises(AssertionError, match="'done' to go away"):
            tmux.wait_gone("done", timeout=0.5)


def test_exit_status_and_last_screen_survive_the_program():
    script = "sleep 0.3; echo first line; echo 'fatal: out of memory'; exit 3"
    with TmuxSession(["sh", "-c", script], width=40, height=5) as tmux:
        assert tmux.wait_exit() == 3
        screen = tmux.capture()
        with pytest.raises(AssertionError, match=r"exited with status 3"):
            tmux.wait_for("never", timeout=0.2)
    assert screen.splitlines()[:2] == ["first line", "fatal: out of memory"]
    assert "Pane is dead" not in screen
    assert len(screen.splitlines()) == 5


def test_cleanup_kills_group_escaped_children_and_server():
    with TmuxSession([sys.executable, "-c", STUBBORN_TREE]) as tmux:
        pids = started_pids(tmux)
        server, socket_path = tmux.server_pid, tmux._socket_path
        assert not any(gone(pid) for pid in [*pids, server])
    assert [pid for pid in [*pids, server] if not gone(pid)] == []
    assert not os.path.exists(socket_path)


def test_cleanup_after_a_failing_test_body():
    with pytest.raises(ZeroDivisionError):
        with TmuxSession([sys.executable, "-c", STUBBORN_TREE]) as tmux:
            pids = started_pids(tmux)
            raise ZeroDivisionError("the test body fails")
    assert [pid for pid in [*pids, tmux.server_pid] if not gone(pid)] == []


def test_textual_standin_counts_and_quits(state_dir):
    env = ddtune_env(DDTUNE_STATE_DIR=str(state_dir))
    tmux = TmuxSession([sys.executable, "-m", "tests.e2e.standin_app"], width=70, height=15, env=env, cwd=REPO)
    tmux.start()
    try:
        _standin_checks(tmux, state_dir)
    finally:
        tmux.close()


def _standin_checks(tmux, state_dir):
    tmux.wait_for("count: 0", timeout=60)
    tmux.send_keys("n", "n", "n")
    screen = tmux.wait_for("count: 3")
    assert "ddtune stand-in" in screen
    assert psutil.Process(tmux.pane_pid).environ()["DDTUNE_STATE_DIR"] == str(state_dir)
    tmux.send_keys("q")
    assert tmux.wait_exit(timeout=60) == 0


def test_failed_start_leaves_no_tmux_server():
    session = TmuxSession(["cat"], width=0)
    with pytest.raises(RuntimeError, match="width too small"):
        with session:
            raise AssertionError("a 0-column pane must not start")
    probe = subprocess.run(["tmux", "-L", session.socket, "list-sessions"], capture_output=True, text=True,
                           timeout=30)
    assert probe.returncode != 0
    assert re.search(r"no server running|No such file or directory", probe.stderr), probe.stderr


def test_bad_cwd_names_the_field(tmp_path):
    with pytest.raises(ValueError, match="cwd .*missing.*not a folder"):
        TmuxSession(["cat"], cwd=tmp_path / "missing")


def test_missing_tmux_fails_with_install_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TmuxMissing, match="apt-get install -y tmux"):
        TmuxSession(["cat"])

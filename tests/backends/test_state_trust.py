"""A state dir ddtune can trust (issue 19, item 3), with the CLI as root (in-process: tests.helpers.run_cli).

A symlink planted for any state file never makes ddtune write through it; a state dir (or a file
in it) another user owns or may write is refused with one line. (A forged server.json naming a live
stranger is tested inside a private PID namespace: test_ownership_pidns.py.)"""

from __future__ import annotations

import os

import pytest

from tests.backends.lifecycle_support import write_config
from tests.backends.state_support import leaders
from tests.helpers import run_cli

VICTIM = b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
FAST = ("--sim-load-seconds", "0.2")


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("ddtune: error:")]


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "passwd-copy"
    path.write_bytes(VICTIM)
    return path


@pytest.mark.parametrize("name", ["lifecycle.lock", "server.json", "launch.json", "startups.jsonl"])
def test_a_planted_symlink_is_never_written_through(tmp_path, state_dir, victim, no_leftovers, name):
    (state_dir / name).symlink_to(victim)
    cfg = write_config(tmp_path, extra=FAST)
    out = run_cli("--config", str(cfg), "up")
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert f"{state_dir / name} is a symbolic link" in line, line
    assert "hint: remove it" in out.stderr
    assert victim.read_bytes() == VICTIM
    assert (state_dir / name).is_symlink()  # not replaced either: a human decides what it was
    assert leaders(state_dir) == []         # nothing was launched


def test_a_symlinked_logs_dir_is_refused(tmp_path, state_dir, no_leftovers):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (state_dir / "logs").symlink_to(elsewhere)
    out = run_cli("--config", str(write_config(tmp_path, extra=FAST)), "up")
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert f"state dir {state_dir / 'logs'} is a symbolic link" in line
    assert list(elsewhere.iterdir()) == [] and leaders(state_dir) == []


def test_a_hard_link_to_a_file_elsewhere_is_not_truncated(tmp_path, state_dir, victim, no_leftovers):
    os.link(victim, state_dir / "lifecycle.lock")
    out = run_cli("--config", str(write_config(tmp_path, extra=FAST)), "up")
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert "lifecycle.lock has 2 hard links" in line
    assert victim.read_bytes() == VICTIM and leaders(state_dir) == []


@pytest.mark.parametrize("command", ["status", "up", "down"])
def test_a_state_dir_of_another_user_is_refused(tmp_path, state_dir, no_leftovers, command):
    (state_dir / "server.json").write_text("{}")
    os.chown(state_dir, 65534, 65534)
    out = run_cli("--config", str(write_config(tmp_path, extra=FAST)), command)
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert f"state dir {state_dir} is owned by uid 65534" in line and "not by you" in line
    assert "DDTUNE_STATE_DIR" in out.stderr  # the fix
    assert leaders(state_dir) == []


def test_a_state_dir_anybody_may_write_is_refused(tmp_path, state_dir, no_leftovers):
    state_dir.chmod(0o777)
    out = run_cli("--config", str(write_config(tmp_path, extra=FAST)), "up")
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert "writable by group or others (mode 0777)" in line
    assert "chmod 700" in out.stderr
    assert state_dir.stat().st_mode & 0o777 == 0o777  # refused, not silently "fixed" under an attacker
    assert leaders(state_dir) == []


def test_a_record_another_user_owns_is_refused(tmp_path, state_dir):
    (state_dir / "server.json").write_text("{}")
    os.chown(state_dir / "server.json", 65534, 65534)
    out = run_cli("--config", str(write_config(tmp_path)), "status")
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert "server.json is owned by uid 65534" in line


def test_a_symlinked_state_dir_is_refused(tmp_path, state_dir):
    link = tmp_path / "state-link"
    link.symlink_to(state_dir)
    out = run_cli("--config", str(write_config(tmp_path)), "status", DDTUNE_STATE_DIR=str(link))
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert f"state dir {link} is a symbolic link" in line


# Forged records naming a live stranger (down refuses it; up starts its own server and spares it) run
# inside a private PID namespace: tests/backends/test_ownership_pidns.py, cases stranger-*.

"""A forged or stale server.json never makes ddtune signal what it did not start.

Each case runs the real CLI inside a private PID namespace (``unshare --pid --fork --mount-proc``,
as root; with ``--user --map-root-user`` otherwise), so the pgid-1 case that once ran ``kill(-1)``
can only ever reach the namespace's own bystanders."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, free_port

SCRIPT = Path(__file__).with_name("pidns_forged_down.py")


def in_pid_namespace(case: str, state_dir: Path, *command: str) -> dict:
    unshare = shutil.which("unshare")
    assert unshare, "these tests need unshare(1) (util-linux)"
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    argv = [unshare, *user, "--pid", "--fork", "--mount-proc", sys.executable, str(SCRIPT), case, str(state_dir),
            str(REPO), *command]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case, why", [
    ("pgid1-no-create-time", "process group 1"),
    ("pgid1-with-create-time", "process group 1"),
    ("older-than-recorded", "started before the recorded server"),
    ("not-a-group-leader", "leader of its own group"),
    ("own-group", "ddtune's own group"),
    ("stranger-no-token", "the record carries no launch token"),
    ("stranger-other-token", "it does not carry the launch token ddtune gave the server it started"),
])
def test_down_refuses_a_forged_record_and_signals_nothing(tmp_path, case, why):
    result = in_pid_namespace(case, tmp_path, "down")
    assert result["alive"] == [True, True, True], result
    assert result["rc"] == 1, result
    assert "refusing to signal pid" in result["stderr"] and why in result["stderr"], result["stderr"]
    assert "Traceback" not in result["stderr"]
    # the record is set aside for a human to read, never acted on again
    assert "server.json" not in result["files"]
    assert any(name.startswith("server.json.refused-") for name in result["files"]), result["files"]


@pytest.mark.parametrize("case", ["pgid1-no-create-time", "stranger-other-token"])
def test_up_over_a_forged_record_starts_without_signalling_anyone(tmp_path, case):
    cfg = tmp_path / "ddtune.toml"
    cfg.write_text(f'[server]\nbackend = "sim"\nport = {free_port()}\nready_timeout_s = 60\n'
                   'extra_args = ["--sim-load-seconds", "0.2"]\n')
    result = in_pid_namespace(case, tmp_path, "--config", str(cfg), "up")
    assert result["alive"] == [True, True, True], result
    assert result["rc"] == 0, result["stderr"]
    assert "refusing to signal pid" in result["stderr"] and "ready" in result["stderr"]
    # the namespace's end killed the server this up started; nothing of it outlives the test


def test_a_survivor_on_a_reused_pid_is_still_ours():
    """psutil.process_iter() keeps the Process it made for a pid; once the pid was reused, that stale
    object gave the old process's create time, and a dead server's child on that pid was not found
    as a survivor (so `down` left it running). Possible wherever pids wrap (pid_max is 32768 on the
    test machine); made certain here by handing the child the old pid (ns_last_pid)."""
    unshare = shutil.which("unshare")
    assert unshare, "these tests need unshare(1) (util-linux)"
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    out = subprocess.run([unshare, *user, "--pid", "--fork", "--mount-proc", sys.executable,
                          str(SCRIPT.with_name("pidns_reused_pid.py")), str(REPO)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["child"] == result["old"], result  # the child really runs on the reused pid
    assert result["survivors"] == result["holders"] == [result["child"]], result

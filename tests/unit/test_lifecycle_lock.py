"""Two lifecycle commands at once: the second waits for the first (and says whom it waits for), or
fails at once with --no-wait; server.json always names the server that serves."""

import json
import subprocess
import time

import psutil

from backends.launch.process import port_owner, tree_pids
from tests.backends.lifecycle_support import read_state, write_config
from tests.helpers import ddtune_cmd, ddtune_env, run_ddtune

SLOW = ("--sim-load-seconds", "3")


def start(cfg, *args):
    return subprocess.Popen(ddtune_cmd("--config", str(cfg), *args), env=ddtune_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_holder(state_dir, timeout=30) -> dict:
    lock = state_dir / "lifecycle.lock"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = lock.read_text() if lock.exists() else ""
        if text:
            return json.loads(text)
        time.sleep(0.05)
    raise AssertionError("no ddtune ever took the lifecycle lock")


def test_two_restarts_at_once_serialise(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=SLOW)
    first = start(cfg, "restart")
    holder = wait_for_holder(state_dir)
    assert holder["pid"] == first.pid and holder["action"] == "restart"
    second = start(cfg, "restart", "--set", "window=1024")
    out1, err1 = first.communicate(timeout=120)
    groups.track_state()
    out2, err2 = second.communicate(timeout=120)
    groups.track_state()
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert f"another ddtune (pid {first.pid}) is restarting" in err2 and "waiting" in err2
    state = read_state(state_dir)
    assert state["knobs"]["window"] == 1024 and state["phase"] == "ready"
    owner = port_owner(state["port"])
    assert owner is not None and owner.pid in tree_pids(state["pid"])
    assert psutil.Process(state["pid"]).create_time() == state["create_time"]


def test_no_wait_fails_clearly_while_another_ddtune_restarts(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=SLOW)
    first = start(cfg, "up")
    wait_for_holder(state_dir)
    out = run_ddtune("--config", str(cfg), "down", "--no-wait")
    assert out.returncode == 1
    assert f"another ddtune (pid {first.pid}) is starting" in out.stderr and "--no-wait" in out.stderr
    assert "Traceback" not in out.stderr
    _, err = first.communicate(timeout=120)
    groups.track_state()
    assert first.returncode == 0, err
    assert read_state(state_dir)["phase"] == "ready"  # the refused down changed nothing

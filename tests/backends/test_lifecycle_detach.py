"""Detach and re-attach: SIGHUP kills the console, not the server; the next ddtune re-attaches."""

import os
import signal
import subprocess
import time

import psutil

from backends.launch.process import is_running
from tests.backends.lifecycle_support import read_state, write_config
from tests.helpers import REPO, ddtune_cmd, ddtune_env, run_ddtune


def test_sighup_of_the_console_leaves_the_server_and_up_reattaches(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "3"))
    # The "console": ddtune up in its own session, as a terminal's foreground job would be.
    console = subprocess.Popen(ddtune_cmd("--config", str(cfg), "up"), env=ddtune_env(), cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        state = None
        while time.monotonic() < deadline and not (state and state.get("pid")):
            state = groups.track_state()
            time.sleep(0.05)
        assert state and state["phase"] == "starting", state
        os.killpg(console.pid, signal.SIGHUP)  # the SSH session drops
        assert console.wait(timeout=30) == -signal.SIGHUP
    finally:
        if console.poll() is None:
            os.killpg(console.pid, signal.SIGKILL)
            console.wait(timeout=30)
        console.stderr.close()
    assert is_running(state["pid"], state["create_time"]), "the server died with the console"

    out = run_ddtune("--config", str(cfg), "up", timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"re-attached to pid {state['pid']}" in out.stderr
    after = read_state(state_dir)
    assert after["pid"] == state["pid"] and after["phase"] == "ready"
    assert psutil.Process(state["pid"]).create_time() == after["create_time"]

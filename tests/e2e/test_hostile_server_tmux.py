"""The real console in tmux, attached to a hostile server (issue 28, item 5): a start whose readiness
probe gets a gzip bomb or JSON nested 200,000 deep shows as failed, with the reason, once
ready_timeout_s has passed. Before, the probe died of a RecursionError or a MemoryError, nothing
reported it, and the panel said waiting-for-port-and-gpu for ever."""

from __future__ import annotations

import json

import pytest

from tests.backends.lifecycle_support import write_config
from tests.e2e.test_console_fail_fast import server_panel
from tests.hostile_http import PEAK_BOUND, HostileServer


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as fh:
        line = next(line for line in fh if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


@pytest.mark.parametrize(("behaviour", "says"), [
    ("deep", "nested more than 32 levels deep"),
    ("bomb", "larger than 8 MiB"),
])
def test_a_start_against_a_hostile_server_shows_as_failed_with_the_reason(open_console, tmp_path, state_dir,
                                                                          behaviour, says):
    with HostileServer({"/generate": behaviour}) as server:
        config = write_config(tmp_path, backend="endpoint", url=server.url, port=server.port, ready_timeout_s=4,
                              connect_grace_s=2)
        tmux = open_console("--config", str(config), width=160, height=40, DDTUNE_IDLE_S="2")
        screen = tmux.wait_for("ddtune — endpoint: failed", timeout=60)
        assert tmux.pane_pid is not None and peak_rss(tmux.pane_pid) < PEAK_BOUND
        record = json.loads((state_dir / "server.json").read_text())
        assert record["phase"] == "failed"
        assert record["reason"].startswith("not ready after 4 s") and says in record["reason"], record["reason"]
        assert "not ready after 4 s" in server_panel(screen) and says in server_panel(screen), screen
        assert tmux.exit_status() is None  # the console goes on
        tmux.send_keys("q")
        tmux.wait_for("not ddtune's to stop")
        tmux.send_keys("l")
        assert tmux.wait_exit(timeout=30) == 0

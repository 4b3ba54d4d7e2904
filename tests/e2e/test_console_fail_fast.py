"""The console attached to an endpoint where nothing listens says so and fails after the grace
(issue 12, item 5), instead of waiting out the hour-long ready timeout behind a made-up ETA."""

from __future__ import annotations

import json
import re

from tests.backends.lifecycle_support import write_config
from tests.helpers import free_port


def server_panel(screen: str) -> str:
    """The server panel's text as one line: the first bordered cell of each row, joined."""
    cells = [line.split("│")[1].strip() for line in screen.splitlines() if line.startswith("│")]
    return " ".join(cells)


def test_console_says_connection_refused_and_fails_after_the_grace(open_console, tmp_path, state_dir):
    url = f"http://127.0.0.1:{free_port()}"
    config = write_config(tmp_path, backend="endpoint", url=url, connect_grace_s=2, ready_timeout_s=3600)
    tmux = open_console("--config", str(config), width=120, height=40)
    screen = tmux.wait_for("refused at", timeout=60)
    panel = server_panel(screen)
    if "failed" not in panel:  # caught while it still waits: the reason, and no guessed ETA
        assert f"connection refused at {url}" in panel
        assert not re.search(r"ETA|left|expected", panel), panel
    screen = tmux.wait_for("ddtune — endpoint: failed", timeout=60)
    assert f"connection refused at {url}: nothing answered there for 2 s ([server] connect_grace_s)" \
        in server_panel(screen)
    record = json.loads((state_dir / "server.json").read_text())
    assert record["phase"] == "failed" and record["reason"].startswith(f"connection refused at {url}")
    tmux.send_keys("q")
    screen = tmux.wait_for("not ddtune's to stop")  # an endpoint: the dialog offers no stop
    assert "Stop the server" not in screen
    tmux.send_keys("l")
    assert tmux.wait_exit(timeout=30) == 0

"""The real `ddtune` console in a real terminal (tmux) against the simulator: it starts the server,
shows the phases, applies a knob, verifies it, and stops the server when asked on quit."""

from __future__ import annotations

import json
import re

import psutil

from tests.backends.lifecycle_support import write_config


def test_console_applies_window_and_stops_server_on_quit(open_console, tmp_path, state_dir):
    config = write_config(tmp_path, extra=("--sim-load-seconds", "1"))
    tmux = open_console("--config", str(config), width=120, height=40)
    screen = tmux.wait_for("SIMULATED", timeout=60)
    assert "ddtune" in screen
    screen = tmux.wait_for(re.compile(r"window\s+2048\s+2048\s+✓ verified"), timeout=90)
    pid = json.loads((state_dir / "server.json").read_text())["pid"]

    tmux.send_keys("k")
    tmux.wait_for("Edit knobs")
    tmux.type_text("x")  # the editor opens on the first knob, budget: a bad value is flagged as typed
    tmux.wait_for(re.compile(r"budget\s+x\s+set budget = 8"))
    tmux.send_keys("C-u")  # tmux can deliver C-u and the next text in one burst that drops letters:
    tmux.wait_for(re.compile(r"budget\s+set budget = 8"))  # so wait for the cleared field first
    tmux.type_text("none")
    tmux.wait_for("no changes")
    tmux.send_keys("Tab", "Tab")  # budget -> topk -> window; focusing a field selects its text
    tmux.type_text("1000")
    tmux.wait_for("1 change(s): window")
    tmux.send_keys("C-s")
    screen = tmux.wait_for(re.compile(r"window\s+1000\s+1000\s+✓ verified"), timeout=90)
    new_pid = json.loads((state_dir / "server.json").read_text())["pid"]
    assert new_pid != pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

    tmux.send_keys("q")
    tmux.wait_for("Leave it running")
    tmux.send_keys("s")
    assert tmux.wait_exit(timeout=60) == 0
    assert not (state_dir / "server.json").exists()
    assert not psutil.pid_exists(new_pid) or psutil.Process(new_pid).status() == psutil.STATUS_ZOMBIE

"""Keys in bursts, as SSH delivers them: a backspace and a digit in ONE write to the real console's
knob editor both take effect (issue 12, item 8; Textualize/textual#6605 drops both)."""

from __future__ import annotations

import re

from tests.backends.lifecycle_support import write_config


def test_backspace_and_digit_in_one_write_both_act(open_console, tmp_path, state_dir):
    config = write_config(tmp_path, extra=("--sim-load-seconds", "0.5"))
    tmux = open_console("--config", str(config), width=120, height=40)
    tmux.wait_for(re.compile(r"window\s+2048\s+2048\s+✓ verified"), timeout=90)

    tmux.send_keys("k")
    tmux.wait_for("Edit knobs")
    tmux.type_text("12")  # budget is focused with its text selected: 12 replaces it
    tmux.wait_for(re.compile(r"budget\s+12\s+was none"))
    tmux.type_text("\x7f3")  # one write: tmux hands the pty both bytes at once
    screen = tmux.wait_for(re.compile(r"budget\s+13\s+was none"))
    assert "1 change(s): budget" in screen
    tmux.type_text("\x7f\x7f4\x1b[D\x7f9")  # two backspaces, 4, left, backspace at the start (nothing), 9
    tmux.wait_for(re.compile(r"budget\s+94\s+was none"))

    tmux.send_keys("Escape")
    tmux.wait_gone("Edit knobs")
    tmux.send_keys("q")
    tmux.wait_for("Leave it running")
    tmux.send_keys("s")
    assert tmux.wait_exit(timeout=60) == 0
    assert not (state_dir / "server.json").exists()

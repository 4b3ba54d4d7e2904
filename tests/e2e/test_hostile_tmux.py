"""Untrusted text is text (issue 19): the real console in tmux, on a simulator that puts terminal
escapes (OSC 2 title, OSC 52 clipboard, CSI colour), Textual actions and markup in its model name,
/server_info version, log lines and answers. The pane title and tmux's buffers stay as they were,
the text shows literally, and the console keeps running."""

from __future__ import annotations

import re
import subprocess
import time

from tests.backends.lifecycle_support import write_config


def test_hostile_server_text_reaches_the_terminal_as_text(open_console, tmp_path):
    shot = tmp_path / "shot"
    hostile = ("\x1b]2;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[31mRED\x1b[0m "
               f"[bold red]markup[/bold red] [@click=app.quit]quit[/] [@click=app.screenshot('{shot}')]shot[/]")
    config = write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-hostile", hostile))
    tmux = open_console("--config", str(config), width=200, height=40)
    tmux._tmux("set-option", "-g", "set-clipboard", "on")   # OSC 52 would make a tmux buffer
    tmux._tmux("set-option", "-g", "allow-rename", "on")
    title = tmux._tmux("display-message", "-p", "-t", "main", "#{pane_title}").strip()

    screen = tmux.wait_for(re.compile(r"window\s+2048\s+2048\s+✓ verified"), timeout=60)
    screen = tmux.wait_for("Model card says:", timeout=10)
    time.sleep(1.0)  # a few redraws of the panel (its version) and the log pane
    screen = tmux.capture()

    assert tmux._tmux("display-message", "-p", "-t", "main", "#{pane_title}").strip() == title
    buffers = subprocess.run([tmux.tmux, "-L", tmux.socket, "list-buffers"], env=tmux.env,
                             capture_output=True, text=True, timeout=10)
    assert buffers.stdout.strip() == "", buffers.stdout   # no clipboard write reached tmux
    assert tmux.exit_status() is None                     # still running
    assert not shot.exists() and not list(tmp_path.glob("shot*"))

    line = next(row for row in screen.splitlines() if "Model card says:" in row)
    # literal: not markup, no escapes (the line may be cut at the pane's edge after the screenshot path)
    assert "RED [bold red]markup[/bold red] [@click=app.quit]quit[/] [@click=app.screenshot(" in line
    assert "pwned" not in screen and "cHduZWQ" not in screen                 # whole sequences removed
    assert re.search(r"sglang 0\.5\.23RED \[bold red\]markup", screen), screen  # /server_info version

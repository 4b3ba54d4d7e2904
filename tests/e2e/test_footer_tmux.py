"""The real console at 80x24 in tmux (issue 22, item 9): the footer's last line shows Help and Quit
first (they used to be cut off after `r Resul`), and both keys work."""

from __future__ import annotations

from tests.backends.lifecycle_support import write_config


def test_footer_shows_help_and_quit_at_80x24(open_console, tmp_path, state_dir):
    config = write_config(tmp_path, extra=("--sim-load-seconds", "1"))
    tmux = open_console("--config", str(config), width=80, height=24)
    screen = tmux.wait_for("SIMULATED", timeout=60)
    footer = screen.rstrip("\n").splitlines()[-1]
    assert footer.lstrip().startswith("? Help q Quit k Knobs") and footer.rstrip().endswith("palette"), footer
    tmux.send_keys("?")
    tmux.wait_for("Server panel: backend")
    tmux.send_keys("?")  # ? closes the help as it opened it
    tmux.wait_gone("Server panel: backend")
    tmux.send_keys("q")
    tmux.wait_for("Leave it running")
    tmux.send_keys("s")
    assert tmux.wait_exit(timeout=60) == 0

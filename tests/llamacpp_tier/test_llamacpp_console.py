"""The real console in a real terminal (tmux) on a real llama.cpp server: the engine and its build
named, the startup phases in the log pane, n_max verified, the load's plots and requests filling with
the server's acceptance, and a stop on quit that leaves nothing. With DDTUNE_SCREENSHOT_DIR set, the
screen under load is also written there as SVG (render it: rsvg-convert -o console.png console.svg)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from backends.launch.process import port_owner
from tests.e2e.tmux import TmuxSession
from tests.helpers import ddtune_cmd, ddtune_env
from tests.llamacpp_tier.conftest import BUILD, write_llama_config

pytestmark = pytest.mark.llamacpp


def save_svg(screen_ansi: str, path: Path, width: int) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=width, file=open(os.devnull, "w"), force_terminal=True)  # noqa: SIM115
    console.print(Text.from_ansi(screen_ansi), end="")
    path.write_text(console.export_svg(title="ddtune on llama.cpp"))


def test_console_shows_the_real_servers_phases_knobs_and_plots(llama, tiny):
    write_llama_config(llama.root, tiny, llama.port, n_max=8)
    tmux = TmuxSession(ddtune_cmd("--config", str(llama.config)), width=140, height=44,
                       env=ddtune_env(), cwd=llama.root)
    tmux.start()
    try:
        screen = tmux.wait_for(re.compile(r"n_max\s+8\s+8\s+✓ verified"), timeout=90)
        assert f"llama.cpp {BUILD}" in screen  # the engine and its build, in the server panel
        assert f"listening on http://127.0.0.1:{llama.port}" in screen  # the server's own startup lines
        assert "adding speculative implementation 'draft-dflash'" in screen
        tmux.send_keys("l")
        screen = tmux.wait_for(re.compile(r"truncated"), timeout=90)  # requests ran to max tokens
        tmux.wait_for(re.compile(r"│\s*\S+\s+\d+\s+\d+\s+[6-9]\.\d"), timeout=60)  # ~9 tokens a step
        # both plots draw the load: at their next redraw (up to a second after the first request is listed)
        screen = tmux.wait_gone("waiting for data", timeout=10)
        shots = os.environ.get("DDTUNE_SCREENSHOT_DIR")
        if shots:
            save_svg(tmux.capture(escapes=True), Path(shots) / "llamacpp-console.svg", 140)
        tmux.send_keys("q")
        tmux.wait_for("Leave it running")
        tmux.send_keys("s")
        assert tmux.wait_exit(timeout=60) == 0
        assert port_owner(llama.port) is None
    finally:
        tmux.close()

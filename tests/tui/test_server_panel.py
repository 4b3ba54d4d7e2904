"""The server panel's phase line says elapsed and remaining time plainly (issue 12, item 7)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual.app import App

from tui.views import ServerView
from tui.widgets.server_panel import ServerPanel, remaining


def test_remaining_words():
    assert remaining(40) == "~40s left"
    assert remaining(125) == "~2m05s left"
    assert remaining(0) == "past the usual time"  # over time: never "0s left" while still starting
    assert remaining(None) == "no history yet"    # no earlier start of this server: no guess


class PanelApp(App):
    def compose(self):
        yield ServerPanel()


async def phase_line(view: ServerView) -> str:
    app = PanelApp()
    async with app.run_test(size=(120, 20)):
        panel = app.query_one(ServerPanel)
        panel.view = view
        out = io.StringIO()
        Console(file=out, width=120, color_system=None).print(panel.render())
        return out.getvalue().splitlines()[1]


@pytest.mark.parametrize("elapsed, eta, shown", [
    (2, 1, "2s elapsed · ~1s left"),          # the "2s / ~1s expected" case
    (12, 40, "12s elapsed · ~40s left"),
    (95, 0, "1m35s elapsed · past the usual time"),
    (3, None, "3s elapsed · no history yet"),
])
async def test_phase_line_says_elapsed_and_left(elapsed, eta, shown):
    view = ServerView(phase="loading-weights", detail="shard 1/4 target", elapsed_s=elapsed, eta_s=eta)
    line = await phase_line(view)
    assert line.startswith("loading-weights  shard 1/4 target")
    assert line.rstrip().endswith(shown)
    assert "expected" not in line


async def test_an_endpoint_shows_no_remaining_time():
    line = await phase_line(ServerView(backend="endpoint", attached=True, phase="waiting-for-port-and-gpu",
                                       detail="connection refused at http://10.0.0.5:30000", elapsed_s=7))
    assert line.rstrip().endswith("connection refused at http://10.0.0.5:30000  7s elapsed")

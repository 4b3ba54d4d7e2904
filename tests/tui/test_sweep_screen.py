"""The console's sweep screen on the simulator: two presets run, the table fills in, a winner is named,
and the console follows the server the sweep left running."""

from __future__ import annotations

from textual.widgets import DataTable, SelectionList, Static

from tests.tui.test_console_pilot import app_for, panel, wait_until
from tui.screens.sweep import SweepScreen


async def test_sweep_screen_runs_two_presets_and_names_the_best(tmp_path, groups):
    app = app_for(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        groups.track_state()
        screen = SweepScreen(["b4-t4-w2048", "b8-t4-w2048"], contexts=[60], concurrency=[2], max_tokens=48)
        app.push_screen(screen)
        await pilot.pause()
        assert list(screen.query_one("#presets", SelectionList).selected) == ["b4-t4-w2048", "b8-t4-w2048"]
        screen.query_one("#baseline").value = False
        await pilot.click("#start")
        status = screen.query_one("#status", Static)
        await wait_until(pilot, lambda: "best overall" in str(status.render()) or "finished" in str(status.render()),
                         timeout=120, what="the sweep to finish")
        groups.track_state()
        text = str(status.render())
        assert "best overall: b" in text and "ddtune report" in text
        table = screen.query_one("#slots", DataTable)
        assert table.row_count == 2
        assert [table.get_row_at(i)[2] for i in range(2)] == ["done", "done"]
        # Back on the main screen the console follows the server the sweep left running.
        await pilot.press("escape")
        await wait_until(pilot, lambda: panel(app).phase == "ready" and
                         {r.name: r.requested for r in panel(app).knobs}.get("budget") in ("4", "8"),
                         what="the console to pick up the sweep's server")
        await app.controller.detach(stop_server=True)

"""The coding load across a console sweep or search (issue 22, item 3): the run pauses the load, as
Apply does, for as long as it needs the server to itself, and the load resumes by itself once the
sweep is done or the search is left with Esc and the server is back on its config."""

from __future__ import annotations

from backends.knobs.config import load_config
from tests.backends.lifecycle_support import write_config
from tests.tui.test_console_pilot import panel, wait_until
from tests.tui.test_search_screen import SMALL, rows
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.search import SearchScreen
from tui.screens.sweep import SweepScreen
from tui.widgets.requests_table import RequestsTable


def loaded_app(tmp_path) -> DdtuneApp:
    config = load_config(write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-step-ms", "5",
                                                       "--sim-wrong-rate", "0")))
    return DdtuneApp(ConsoleController(config, simulated=True, load_concurrency=2, load_max_tokens=32,
                                       autostart_load=True))


async def test_the_load_resumes_after_a_console_sweep(tmp_path, groups):
    app = loaded_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.main.query_one(RequestsTable)
        await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= 2, what="load running")
        groups.track_state()
        screen = SweepScreen(app.controller, ["b4-t4-w2048"], contexts=[60], concurrency=[2], max_tokens=16)
        app.push_screen(screen)
        await pilot.pause()
        screen.query_one("#baseline").value = False
        subtitles = set()
        await pilot.click("#start")
        await wait_until(pilot, lambda: subtitles.add(str(table.border_subtitle)) or not screen.running,
                         timeout=90, what="the sweep to finish")
        groups.track_state()
        assert "load: off (stopped)" not in subtitles, subtitles
        assert any(s.startswith("load: on (paused") for s in subtitles), subtitles
        before = table.total
        await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= before + 2,
                         timeout=60, what="the load to resume after the sweep")
        groups.track_state()
        assert app.controller.load_running and str(table.border_subtitle) == "load: on (2 streams of coding)"
        await app.controller.detach(stop_server=True)


async def test_the_load_resumes_after_leaving_a_search_with_esc(tmp_path, groups):
    app = loaded_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.main.query_one(RequestsTable)
        await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= 2, what="load running")
        groups.track_state()
        screen = SearchScreen(app.controller, SMALL.space, SMALL)
        app.push_screen(screen)
        await pilot.pause()
        await pilot.click("#start")
        await wait_until(pilot, lambda: any(r[4] == "measuring" for r in rows(screen).values()),
                         what="the first measurement")
        groups.track_state()
        assert str(table.border_subtitle).startswith("load: on (paused"), table.border_subtitle
        await pilot.press("escape")
        before = table.total
        await wait_until(pilot, lambda: (groups.track_state() or True) and panel(app).phase == "ready"
                         and table.total >= before + 2, timeout=60, what="the load to resume after the search")
        assert app.controller.load_running and str(table.border_subtitle) == "load: on (2 streams of coding)"
        await app.controller.detach(stop_server=True)

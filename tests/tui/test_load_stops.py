"""Issue 32: the live load never stops silently. Every stop says why in the load line (the requests
table's subtitle) and in the log pane, and the load comes back by itself once its server is back and
verified; a configuration's share cut short by a restart or a stop reads ``interrupted (...)``, never
``failed``. Cases: a headless ``ddtune restart`` beside the console (another console's Apply is the
same), and ``x`` (stop) then ``u`` (start)."""

from __future__ import annotations

import asyncio
import json

from backends.knobs.config import load_config
from tests.backends.lifecycle_support import write_config
from tests.helpers import REPO, ddtune_cmd, ddtune_env
from tests.tui.test_console_pilot import log_text, panel, wait_until
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.quit_dialog import ConfirmStop
from tui.widgets.requests_table import RequestsTable


def loaded_app(tmp_path) -> tuple[DdtuneApp, object]:
    """The console on a fast simulator (no seeded wrong answers) with a load of 2 streams; its config file."""
    config_file = write_config(tmp_path, extra=("--sim-load-seconds", "0.3", "--sim-step-ms", "5",
                                                "--sim-wrong-rate", "0"))
    return DdtuneApp(ConsoleController(load_config(config_file), simulated=True, load_concurrency=2,
                                       load_max_tokens=32, autostart_load=True)), config_file


async def load_running(pilot, app, groups) -> RequestsTable:
    table = app.main.query_one(RequestsTable)
    await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= 2, what="load running")
    groups.track_state()
    return table


def subtitles(table, seen: set[str]):
    """A predicate helper: collect every load line the table shows while waiting."""
    return lambda: seen.add(str(table.border_subtitle)) or False


def load_runs(state_dir) -> list[dict]:
    return [json.loads((r / "run.json").read_text()) for r in sorted((state_dir / "runs").glob("*-load"))]


async def test_a_headless_restart_beside_the_console_pauses_the_load_and_it_resumes(tmp_path, groups, state_dir):
    app, config_file = loaded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await load_running(pilot, app, groups)
        first = panel(app).pid
        seen: set[str] = set()
        proc = await asyncio.create_subprocess_exec(*ddtune_cmd("--config", str(config_file), "restart", "--set",
                                                                "window=1024"), cwd=REPO, env=ddtune_env(),
                                                    stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.DEVNULL)
        await wait_until(pilot, lambda: subtitles(table, seen)() or proc.returncode is not None, timeout=60,
                         what="the headless restart")
        assert await proc.wait() == 0
        groups.track_state()
        before = table.total
        await wait_until(pilot, lambda: subtitles(table, seen)() or (panel(app).pid != first
                         and panel(app).phase == "ready" and table.total >= before + 2), timeout=30,
                         what="the load to resume by itself")
        assert not any(s.startswith("load: off") for s in seen), seen  # paused, never stopped
        assert any(s.startswith("load: on (paused: ") for s in seen), seen
        assert str(table.border_subtitle) == "load: on (2 streams of coding)"
        assert "load on: paused: " in log_text(app)
        # the log pane shows new lines on the app's 1 s tick: the resume is said there within it
        await wait_until(pilot, lambda: "load on: 2 streams" in log_text(app).split("load on: paused: ")[-1],
                         timeout=5, what="the resume said in the log pane")
        await app.controller.detach(stop_server=True)
    docs = load_runs(state_dir)
    assert [d["status"] for d in docs] == ["interrupted", "done"], docs
    assert docs[0]["summary"]["reason"] == "restart"


async def test_x_then_u_pauses_the_load_says_why_and_resumes_it(tmp_path, groups, state_dir):
    app, _ = loaded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await load_running(pilot, app, groups)
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmStop), what="the stop dialog")
        await pilot.press("y")
        await wait_until(pilot, lambda: panel(app).phase == "stopped", what="the server stopped")
        await wait_until(pilot, lambda: "(u starts one)" in str(table.border_subtitle), what="the load line")
        line = str(table.border_subtitle)
        assert line.startswith("load: on (paused: stopped pid "), line
        await wait_until(pilot, lambda: "load on: paused: the server is stopping (x)" in log_text(app), timeout=5,
                         what="the pause said in the log pane")  # shown on the app's 1 s tick
        assert "cannot connect" not in line
        errors = [row for row in table.rows if row["verdict"] == "error"]
        assert errors == [], errors  # cancelled before the server went, never failed by it
        cut = [row for row in table.rows if row["verdict"].startswith("cancel")]
        assert cut and {row["verdict"] for row in cut} == {"cancelled"}, cut  # as short as the other verdicts

        await pilot.press("u")
        before = table.total
        await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= before + 2, timeout=30,
                         what="the load to resume once the server is back")
        groups.track_state()
        assert str(table.border_subtitle) == "load: on (2 streams of coding)"
        await app.controller.detach(stop_server=True)
    docs = load_runs(state_dir)
    assert [d["status"] for d in docs] == ["interrupted", "done"], docs
    assert docs[0]["summary"]["reason"] == "server stopped"

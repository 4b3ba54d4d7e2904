"""The console's search screen on the simulator: a small space searched from the screen (the table
fills, the best is named with its `ddtune up` line, the folder is `ddtune search`'s and the results
list finds it), bad input refused naming the field, and leaving or quitting mid-search stopping it
cleanly and resumably."""

from __future__ import annotations

import json

from textual.widgets import Button, DataTable, Input, Static

from tests.tui.test_console_pilot import app_for, panel, wait_until
from workloads.search import SearchRequest
from tui.screens.search import SearchScreen
from workloads.search.space import EXAMPLE

SMALL = SearchRequest("budget=4,8 topk=2,4", target_context=60, target_concurrency=2, max_tokens=16, waves=2,
                      rungs=1, warmup=0)


def rows(screen) -> dict[str, list]:
    table = screen.query_one("#measured", DataTable)
    return {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}


async def start_small_search(app, pilot, groups) -> tuple[SearchScreen, dict]:
    """Once the console's server is ready, open the search screen on SMALL and press Start; the
    knobs the server ran before (a stopped search must bring them back)."""
    await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
    groups.track_state()
    knobs_before = {r.name: r.requested for r in panel(app).knobs}
    screen = SearchScreen(app.controller, SMALL.space, SMALL)
    app.push_screen(screen)
    await pilot.pause()
    await pilot.click("#start")
    return screen, knobs_before


def searches(state_dir):
    return sorted((state_dir / "runs").glob("*-search"))


async def test_a_small_search_runs_from_the_screen_and_names_the_best(tmp_path, groups, state_dir):
    from workloads.report import list_runs

    app = app_for(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen, knobs_before = await start_small_search(app, pilot, groups)
        best = screen.query_one("#best", Static)

        def finished() -> bool:
            groups.track_state()
            said = str(screen.query_one("#round", Static).render())
            return "run it: ddtune up" in str(best.render()) or "interrupted" in said

        await wait_until(pilot, finished, timeout=120, what="the search to finish")
        text = str(best.render())
        [folder] = searches(state_dir)
        summary = json.loads((folder / "summary.json").read_text())
        label = summary["best"]["label"]
        assert f"best: {label}:" in text and "ahead of" in text
        assert "run it: ddtune up --set budget=" in text and "--set topk=" in text
        table = rows(screen)
        assert len(table) == len(summary["measured"]) >= 3, table  # one pass: 1 + (2-1) + (2-1) configurations
        assert table[label][4] == "BEST"
        for row in table.values():
            assert int(row[1]) >= SMALL.waves and row[2] != "-" and " ± " in row[2], row
        used = summary["restarts"]["used"]
        assert sum(int(r[3]) for r in table.values()) == used
        assert str(screen.query_one("#restarts", Static).render()).startswith(f"restarts: {used} of a full grid's 4")
        manifest = json.loads((folder / "search.json").read_text())
        assert manifest["status"] == "done" and manifest["target"]["context"] == 60
        assert manifest["space"] == [["budget", [4, 8]], ["topk", [2, 4]]]
        [row] = [r for r in list_runs() if r.kind == "search"]  # the results screen (r) lists it
        assert row.status == "done" and row.summary.startswith(f"best {label}:")
        # like `ddtune search`, the server goes back on the config it ran before, then the screen is free
        await wait_until(pilot, lambda: not screen.running, what="the search to end")
        view = app.controller.view()  # what the session knows once the search is over: the server back
        assert view.phase == "ready" and {r.name: r.requested for r in view.knobs} == knobs_before, view
        said = " ".join(app.said)  # toasts expire; their texts stay
        assert "returned the server to the config it ran before" in said
        # the panel shows it once the messages posted before the search ended are handled
        await wait_until(pilot, lambda: panel(app).phase == "ready" and
                         {r.name: r.requested for r in panel(app).knobs} == knobs_before, what="the panel")
        assert not screen.query_one("#start", Button).disabled  # ready for another search
        assert "run it: ddtune up" in text and "(here: a)" in text
        best_knobs = {k: "none" if v is None else str(v) for k, v in summary["best"]["knobs"].items()}
        pid = panel(app).pid
        await pilot.press("a")  # issue 32: a key applies the best the search found
        await wait_until(pilot, lambda: (groups.track_state() or True) and panel(app).phase == "ready" and
                         panel(app).pid != pid and
                         {r.name: r.requested for r in panel(app).knobs if r.name in best_knobs} == best_knobs
                         and all(r.verified is not False for r in panel(app).knobs), what="the best applied")
        await app.controller.detach(stop_server=True)


async def test_bad_input_names_the_field_and_starts_nothing(tmp_path, groups, state_dir):
    app = app_for(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        state = groups.track_state()
        [command] = [c for c in app.get_system_commands(app.screen) if c.title == "Knob search (S)"]  # the palette
        app.call_later(command.callback)  # as the palette runs a chosen command
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        assert app.screen.query_one("#space", Input).value == EXAMPLE  # `ddtune search --help`'s example
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main
        await pilot.press("S")  # the key
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        status = screen.query_one("#round", Static)
        for field, value, said in [
            ("space", "budget=4,8 colour=2", "space: unknown knob 'colour'"),
            ("space", "budget=4,x", "space"),
            ("space", "budget=8 topk=4", "space 'budget=8 topk=4' holds one configuration"),
            ("context", "lots", "target context: 'lots' is not a whole number"),
            ("concurrency", "0", "concurrency: '0' is not a whole number of at least 1"),
            ("gpus", "0,0", "GPUs '0,0': GPU 0 is named twice"),
        ]:
            screen.query_one("#space", Input).value = SMALL.space
            screen.query_one("#context", Input).value = "60"
            screen.query_one("#concurrency", Input).value = "2"
            screen.query_one("#gpus", Input).value = ""
            screen.query_one(f"#{field}", Input).value = value
            await pilot.pause(0.3)  # a button ignores a second press within its 0.2 s press effect
            await pilot.click("#start")
            await pilot.pause()
            shown = str(status.render())
            assert shown.startswith("not started: ") and said in shown, (field, value, shown)
            assert not screen.running and not screen.query_one("#start", Button).disabled
        assert not (state_dir / "runs").exists() or searches(state_dir) == []
        assert panel(app).pid == state["pid"]  # nothing restarted
        await app.controller.detach(stop_server=True)


async def test_leaving_mid_search_stops_it_resumably_and_returns_the_server(tmp_path, groups, state_dir):
    app = app_for(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen, knobs_before = await start_small_search(app, pilot, groups)
        await wait_until(pilot, lambda: any(r[4] == "measuring" for r in rows(screen).values()),
                         what="the first measurement")
        groups.track_state()
        await pilot.press("escape")
        assert app.screen is app.main
        said = " ".join(app.said)  # toasts expire; their texts stay
        [folder] = searches(state_dir)
        assert f"continue it with: ddtune search --resume --out {folder}" in said

        def settled() -> bool:
            groups.track_state()
            manifest = json.loads((folder / "search.json").read_text())
            view = panel(app)
            return (manifest["status"] == "interrupted" and view.phase == "ready"
                    and {r.name: r.requested for r in view.knobs} == knobs_before)

        await wait_until(pilot, settled, timeout=60, what="the search interrupted and the server back")
        assert not (folder / "summary.json").exists()
        await app.controller.detach(stop_server=True)


async def test_quitting_mid_search_on_lanes_stops_every_lane_server(tmp_path, groups, state_dir):
    from tests.helpers import free_port_run

    app = app_for(tmp_path, port=free_port_run(4))  # lane ports below the ephemeral range (tests/helpers.py)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        groups.track_state()
        screen = SearchScreen(app.controller, SMALL.space, SMALL)
        app.push_screen(screen)
        await pilot.pause()
        screen.query_one("#gpus", Input).value = "2,3"
        await pilot.click("#start")

        def lanes_measuring() -> bool:
            for path in (state_dir / "lanes").glob("*/server.json"):
                groups.track(json.loads(path.read_text()).get("pgid"))
            return any(r[4].startswith("lane ") and r[4].endswith(": measuring") for r in rows(screen).values())

        await wait_until(pilot, lanes_measuring, what="a lane measuring")
        [worker] = [w for w in app.workers if w.group == "search"]
        at_exit: dict = {}
        exit_app = app.exit

        def exit_(*args, **kwargs):  # the moment the console ends: after it the event loop may end too
            at_exit.update(finished=worker.is_finished, lanes=list((state_dir / "lanes").glob("*/server.json")))
            exit_app(*args, **kwargs)

        app.exit = exit_
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("l")  # quit, leaving the console's server running
        await wait_until(pilot, lambda: not app.is_running, what="the console to quit")
    assert at_exit == {"finished": True, "lanes": []}  # the quit waited for the search and its lanes to stop
    [folder] = searches(state_dir)
    manifest = json.loads((folder / "search.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["parallel"]["gpus"] == ["2", "3"]
    assert list((state_dir / "lanes").glob("*/server.json")) == []  # every lane server stopped
    state = groups.track_state()
    assert state is not None and state["phase"] == "ready"  # the console's own server left running, as asked


def test_the_help_lists_every_key_of_the_app():
    """The help's key table stays true: each of the app's keys is in it."""
    from tui.app import DdtuneApp
    from tui.screens.help import HELP

    names = {"question_mark": "?"}
    for binding in DdtuneApp.BINDINGS:
        for key in binding.key.split(","):
            assert f"`{names.get(key, key)}`" in HELP, key

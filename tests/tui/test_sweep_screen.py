"""The console's sweep screen on the simulator: two presets run, the table fills in, a winner is named,
the console's panel follows the sweep's restarts live (one session, no resync), and the server
returns to the config it ran before the sweep."""

from __future__ import annotations

from textual.widgets import DataTable, SelectionList, Static

from tests.backends.lifecycle_support import PHASED
from tests.tui.test_console_pilot import app_for, panel, panel_views, wait_until
from tui.screens.sweep import SweepScreen


async def test_sweep_screen_runs_two_presets_and_names_the_best(tmp_path, groups):
    app = app_for(tmp_path, extra=PHASED)  # the panel must show each restart's loading phase
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        groups.track_state()
        knobs_before = {r.name: r.requested for r in panel(app).knobs}
        first_pid = panel(app).pid
        screen = SweepScreen(app.controller, ["b4-t4-w2048", "b8-t4-w2048"], contexts=[60], concurrency=[2],
                             max_tokens=48)
        app.push_screen(screen)
        await pilot.pause()
        assert list(screen.query_one("#presets", SelectionList).selected) == ["b4-t4-w2048", "b8-t4-w2048"]
        screen.query_one("#baseline").value = False
        await pilot.click("#start")
        status = screen.query_one("#status", Static)
        views = panel_views(app)  # the main screen's panel, updated live under the sweep screen

        def finished() -> bool:
            return "best overall" in str(status.render()) or "finished" in str(status.render())

        await wait_until(pilot, finished, timeout=120, what="the sweep to finish")
        groups.track_state()
        text = str(status.render())
        assert "best overall: b" in text and "ddtune report" in text
        table = screen.query_one("#slots", DataTable)
        assert table.row_count == 2
        assert [str(table.get_row_at(i)[2]) for i in range(2)] == ["done", "done"]  # cells are Text: no markup
        assert not screen.running and not screen.query_one("#start").disabled  # ready for another sweep
        # The sweep drove the console's own session: the panel followed each restart as it happened
        # (new pids, loading phases) without a resync: two configurations, then, like `ddtune sweep`,
        # the server back on the config it ran before the sweep (a third new pid).
        phases, pids = {view.phase for view in views}, {view.pid for view in views}
        assert "loading-weights" in phases and "stopping-old" in phases, phases
        assert len(pids - {None, first_pid}) == 3, pids
        state = groups.track_state()
        await pilot.press("escape")
        await pilot.pause()
        assert panel(app).phase == "ready" and panel(app).pid == state["pid"]
        assert {r.name: r.requested for r in panel(app).knobs} == knobs_before
        assert knobs_before["window"] == "2048" and state["knobs"]["window"] == 2048
        from workloads.report import list_runs  # the results screen (r) lists the sweep

        sweeps = [r for r in list_runs() if r.kind == "sweep"]
        assert len(sweeps) == 1 and sweeps[0].status == "done" and "2 done, 0 failed" in sweeps[0].summary
        await app.controller.detach(stop_server=True)


async def test_the_picker_shows_what_is_picked_without_colour():
    from tui.app import DdtuneApp

    from tests.tui.fixtures import idle_console

    app = DdtuneApp(None)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = SweepScreen(idle_console(), ["b4-t4-w2048", "b8-t4-w2048", "b16-t4-w2048"])
        app.push_screen(screen)
        await pilot.pause()
        picks = screen.query_one("#presets", SelectionList)
        prompts = lambda: [str(picks.get_option_at_index(i).prompt) for i in range(picks.option_count)]  # noqa: E731
        assert prompts() == ["[x] b4-t4-w2048", "[x] b8-t4-w2048", "[ ] b16-t4-w2048"]
        assert picks.border_title == "presets: 2 of 3 picked"
        picks.select("b16-t4-w2048")
        picks.deselect("b4-t4-w2048")
        await pilot.pause()
        assert prompts() == ["[ ] b4-t4-w2048", "[x] b8-t4-w2048", "[x] b16-t4-w2048"]
        assert picks.border_title == "presets: 2 of 3 picked"
        picks.select("b4-t4-w2048")
        await pilot.pause()
        assert picks.border_title == "presets: 3 of 3 picked"
        picks.focus()  # issue 32: j/k move in every list
        picks.highlighted = 0
        await pilot.press("j", "j", "k")
        assert picks.highlighted == 1 and app.screen is screen


async def test_sweep_screen_runs_one_lane_per_gpu_beside_the_console_server(tmp_path, groups, state_dir):
    import json
    import os
    import signal

    from textual.widgets import Input

    from tests.helpers import free_port_run

    # Lane ports below the ephemeral range (tests/helpers.py). Every server here, the console's and the
    # lanes', holds in loading-weights (--sim-hang-at load) until the test sends it SIGUSR1, so the lane
    # table shows that phase however loaded the machine: a lane reads its log without a stream and
    # reports its phase once per readiness poll, and a loaded poll slept through a 0.5 s start.
    app = app_for(tmp_path, port=free_port_run(4), extra=(*PHASED, "--sim-hang-at", "load"))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "loading-weights", timeout=60, what="first loading")
        groups.track_state()
        os.kill(panel(app).pid, signal.SIGUSR1)
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        state = groups.track_state()
        screen = SweepScreen(app.controller, ["b4-t4-w2048", "b8-t4-w2048"], contexts=[60], concurrency=[2],
                             max_tokens=48)
        app.push_screen(screen)
        await pilot.pause()
        screen.query_one("#baseline").value = False
        screen.query_one("#gpus", Input).value = "0,0"
        await pilot.click("#start")
        await pilot.pause()
        said = " ".join(app.said)  # toasts expire; their texts stay
        assert not screen.running and "GPU 0 is named twice" in said  # refused, nothing ran
        screen.query_one("#gpus", Input).value = "2,3"
        await pilot.pause(0.3)  # a button ignores a second press within its 0.2 s press effect
        await pilot.click("#start")
        lanes = screen.query_one("#lanes", DataTable)
        status = screen.query_one("#status", Static)
        phases: set[str] = set()
        loading: set = set()  # the lane rows that have shown loading-weights
        # every phase the lane table is given, however briefly it stays there (a later note may follow it)
        update_cell = lanes.update_cell

        def record_phase(row_key, column_key, value, **kw):
            if column_key == lanes.ordered_columns[3].key:
                phases.add(str(value).split(" ")[0])
                if str(value).startswith("loading-weights"):
                    loading.add(row_key)
            return update_cell(row_key, column_key, value, **kw)

        lanes.update_cell = record_phase
        lane_pids: set[int] = set()

        def lane_servers() -> None:
            for path in (state_dir / "lanes").glob("*/server.json"):
                doc = json.loads(path.read_text())
                groups.track(doc.get("pgid"))
                lane_pids.add(doc["pid"])

        def both_loading() -> bool:
            lane_servers()
            return len(loading) == 2

        await wait_until(pilot, both_loading, timeout=90, what="both lane servers loading")
        assert len(lane_pids) == 2 and state["pid"] not in lane_pids
        for pid in lane_pids:
            os.kill(pid, signal.SIGUSR1)

        def finished() -> bool:
            lane_servers()
            return "best overall" in str(status.render()) or "finished" in str(status.render())

        await wait_until(pilot, finished, timeout=120, what="the lane sweep to finish")
        assert lanes.display and lanes.row_count == 2
        rows = [lanes.get_row_at(i) for i in range(2)]
        assert [str(r[1]) for r in rows] == ["2", "3"]
        assert len({str(r[2]) for r in rows} | {str(state["port"])}) == 3  # own ports, none the console server's
        assert all(str(r[3]).startswith("stopped pid") and str(r[5]) == "cells 1/1" for r in rows), rows
        assert {"loading-weights", "measuring", "done"} <= phases, phases
        table = screen.query_one("#slots", DataTable)
        assert [str(table.get_row_at(i)[2]) for i in range(2)] == ["done", "done"]  # cells are Text: no markup
        assert not screen.running and not screen.query_one("#start").disabled  # ready for another sweep
        assert list((state_dir / "lanes").glob("*/server.json")) == []
        # the console's own server was left alone
        assert panel(app).phase == "ready" and panel(app).pid == state["pid"]
        await app.controller.detach(stop_server=True)


async def test_a_lossless_mismatch_is_in_the_table_in_red_and_named_in_the_verdict(tmp_path, groups):
    """With the baseline on, every run's outputs are checked against the baseline's: a simulator told
    to leave the greedy output on every prompt with speculation on (--sim-diverge-rate 1) shows
    DIFFERS in red on the speculative run, and the final status line names it."""
    from workloads.sweep.lossless import PROMPTS

    app = app_for(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-step-ms", "0", "--sim-diverge-rate", "1"))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        groups.track_state()
        screen = SweepScreen(app.controller, ["b8-t4-w2048"], contexts=[60], concurrency=[1], max_tokens=16)
        app.push_screen(screen)
        await pilot.pause()
        assert screen.query_one("#baseline").value  # on by default
        await pilot.click("#start")
        status = screen.query_one("#status", Static)

        def finished() -> bool:
            groups.track_state()
            return "best overall" in str(status.render()) or "finished" in str(status.render())

        await wait_until(pilot, finished, timeout=120, what="the sweep to finish")
        table = screen.query_one("#slots", DataTable)
        assert [str(c.label) for c in table.ordered_columns][5] == "lossless"
        rows = {str(table.get_row_at(i)[1]): table.get_row_at(i) for i in range(table.row_count)}
        assert set(rows) == {"baseline", "b8-t4-w2048"}
        assert str(rows["baseline"][5]) == f"baseline {PROMPTS} prompts"
        cell = rows["b8-t4-w2048"][5]
        assert str(cell).startswith(f"DIFFERS {PROMPTS}/{PROMPTS} @") and "red" in str(cell.style)
        text = str(status.render())
        assert f"LOSSLESS CHECK FAILED: b8-t4-w2048 changed the greedy output of {PROMPTS}/{PROMPTS} prompts" in text
        said = " ".join(app.said)  # toasts expire; their texts stay
        assert "prompts DIVERGED from the baseline" in said
        await app.controller.detach(stop_server=True)


def test_the_lossless_cell_says_identical_differs_or_skipped():
    from tui.console_sweep import TONES
    from workloads.sweep.board import lossless_mark

    same = lossless_mark({"status": "compared", "prompts": 8, "diverged": 0, "first": [None] * 8})
    assert same.text == "identical 8/8" and "red" not in TONES.get(same.tone, "")
    differs = lossless_mark({"status": "compared", "prompts": 8, "diverged": 5, "first": [3, None, 7, 9, 1, 2, None,
                                                                                          None]})
    assert differs.text == "DIFFERS 5/8 @3,7,9…" and "red" in TONES[differs.tone]
    assert lossless_mark({"status": "recorded", "prompts": 8}).text == "baseline 8 prompts"
    assert lossless_mark({"status": "no baseline yet"}).text == "skipped: no baseline yet"
    assert lossless_mark({"status": "error", "error": "connection refused"}).text == "skipped: connection refused"

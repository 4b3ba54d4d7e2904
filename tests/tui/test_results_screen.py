"""The results screen (r) is no dead end (issue 22, item 4): Enter opens a run (a bench run's cells, a
load run's summary and windows, a sweep's report), and two runs of any kind compare on what they
share (two load runs on their summaries), saying plainly what that is."""

from __future__ import annotations

import json

from textual.widgets import DataTable

from tests.tui.test_dialogs import screen_text
from tests.workloads.test_report import SPEEDS, make_sweep
from tests.workloads.test_report_load import load_run
from tui.app import DdtuneApp
from tui.screens.results import ResultsScreen
from tui.screens.run_detail import RunDetailScreen


def bench_run(root, name, tok_s):
    path = root / name
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"id": name, "kind": "bench", "status": "done",
                                               "server": {"knobs": {"budget": 8, "topk": 4, "window": 2048}}}))
    (path / "cells.jsonl").write_text(json.dumps({"context": 1024, "concurrency": 1, "requests": 8, "errors": 0,
                                                  "output_tok_s": tok_s}) + "\n")
    return path


async def wait_for(pilot, predicate, what):
    for _ in range(100):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def open_results(pilot, app) -> tuple[ResultsScreen, DataTable]:
    screen = ResultsScreen()
    app.push_screen(screen)
    await pilot.pause()
    table = screen.query_one("#runs", DataTable)
    await wait_for(pilot, lambda: table.row_count > 0, "the runs listed")
    table.focus()
    return screen, table


async def test_enter_opens_a_load_run_a_bench_run_and_a_sweep(state_dir):
    runs = state_dir / "runs"
    load_run(runs, "20261130T090000Z-load", 1500.0, 5.5)
    bench_run(runs, "20261130T080000Z-bench", 900.0)
    make_sweep(runs, SPEEDS)  # runs/sweep: its files name their own paths, so it is written in place
    app = DdtuneApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        screen, table = await open_results(pilot, app)
        assert [r.kind for r in screen.rows] == ["sweep", "load", "bench"]
        assert "Enter: its report" in screen.rows[0].summary  # a sweep row no longer points only to a shell
        expected = ["Best overall: b8", "| output tok/s | 1500.0 |", "# ddtune report"]
        for row, says in enumerate(expected):
            table.move_cursor(row=row)
            await pilot.press("enter")
            assert isinstance(app.screen, RunDetailScreen)
            detail = app.screen
            await wait_for(pilot, lambda: detail.text, "the run's report")  # noqa: B023
            assert says in detail.text, detail.text
            await pilot.pause()
            shown = screen_text(app)  # issue 32: the report's Markdown tables are shown as tables
            assert "|---" not in shown and "| " not in shown and "**" not in shown, shown
            await pilot.press("escape")
            assert app.screen is screen
        table.move_cursor(row=2)
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(app.screen, "text", ""), "the bench report")
        assert "1024" in app.screen.text and "900" in app.screen.text


async def test_two_load_runs_compare_on_their_summaries(state_dir):
    runs = state_dir / "runs"
    load_run(runs, "20261130T090000Z-load", 1500.0, 5.5)
    load_run(runs, "20261130T091500Z-load", 1650.0, 5.0, windows=False, source="console")
    bench_run(runs, "20261130T080000Z-bench", 900.0)
    app = DdtuneApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        screen, table = await open_results(pilot, app)
        comp = screen.query_one("#compare", DataTable)
        table.move_cursor(row=1)  # A: the older load run
        await pilot.press("space")
        table.move_cursor(row=0)
        await pilot.press("space")
        await pilot.pause()
        assert str(comp.border_subtitle) == "two load runs: compared on their summaries"
        rows = [[str(c) for c in comp.get_row_at(i)] for i in range(comp.row_count)]
        assert rows[0] == ["output tok/s (whole run)", "1500.0", "1650.0", "1.10x"], rows
        assert [str(c.label) for c in comp.ordered_columns] == ["measure", "A", "B", "B/A"]
        said = list(app.said)
        assert not any("share no bench cell" in s for s in said), said
        table.move_cursor(row=2)  # a load run and a bench run: nothing shared, said plainly
        await pilot.press("space")
        await pilot.pause()
        assert str(comp.border_subtitle).startswith("nothing in common: A is a load run, B is a bench run with 1 "
                                                    "cells"), comp.border_subtitle
        assert comp.row_count == 0


async def test_j_and_k_move_in_the_runs_list(state_dir):
    """Issue 32: j/k move in every list, as in nvitop and k9s (here k is not the knob editor)."""
    runs = state_dir / "runs"
    for i in range(3):
        bench_run(runs, f"20261130T08000{i}Z-bench", 900.0 + i)
    app = DdtuneApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        screen, table = await open_results(pilot, app)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1 and app.screen is screen

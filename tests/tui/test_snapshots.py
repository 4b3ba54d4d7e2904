"""SVG snapshots of the main screen at 80x24, 160x50 and 200x50 with every input fixed."""

import pytest

from tests.tui.fixtures import (
    EIGHT_GPUS, FAILED, LANE_GPUS, LOADING, NO_GPU, READY, READY_MISMATCH, RESTARTING, feed,
)
from tui.app import DdtuneApp


async def _settle(pilot):
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    pilot.app.main.query_one("#requests").flush()
    plots = pilot.app.main.query_one("#plots")
    plots.redraw()
    await pilot.pause()


def _steady_cursors(screen) -> None:
    """Draw the text cursor of every input on the screen steadily. Textual blinks it every 0.5 s from
    the moment a field takes focus, so on a loaded machine a snapshot taken one blink later showed it
    hidden (seen in CI as flaky form snapshots); with the blink off it is always drawn, as when fast."""
    from textual.widgets import Input

    for field in screen.query(Input):
        field.cursor_blink = False


@pytest.mark.parametrize("size,server,gpu,load,ab", [
    ((80, 24), LOADING, NO_GPU, False, False),
    ((80, 24), READY, EIGHT_GPUS, False, False),
    ((80, 24), RESTARTING, NO_GPU, False, False),
    ((80, 24), READY_MISMATCH, EIGHT_GPUS, False, False),
    ((80, 24), FAILED, NO_GPU, False, False),
    ((80, 24), READY, EIGHT_GPUS, True, False),
    ((160, 50), READY_MISMATCH, EIGHT_GPUS, True, False),
    ((200, 50), READY, EIGHT_GPUS, True, True),
    ((80, 24), READY, EIGHT_GPUS, True, True),
    ((160, 50), READY, LANE_GPUS, True, False),
    ((80, 24), READY, LANE_GPUS, False, False),
], ids=["80x24-loading-nogpu", "80x24-ready-8gpu", "80x24-restarting", "80x24-mismatch", "80x24-failed",
        "80x24-load-running", "160x50-ready-mismatch-8gpu", "200x50-ab-strip", "80x24-ab-strip", "160x50-lanes",
        "80x24-lanes"])
def test_main_screen(snap_compare, size, server, gpu, load, ab):
    """Every state an operator meets, at 80x24 and wide: the phase, the knobs (requested and what
    the server says), the GPU line and the log tail are on screen in each. With the A/B: the marker
    labelled with the change on both plots and the strip under them (one line at 80x24); at 200x50
    also the no-speculation reference line. With a parallel sweep's lanes beside the console's server:
    their memory in its own colour on their GPUs and one line per lane server naming its pid."""
    async def run_before(pilot):
        feed(pilot.app.main, server=server, gpu=gpu, points=40 if load else 0, requests=12 if load else 0, ab=ab,
             no_spec=ab and size[0] > 80)
        await _settle(pilot)

    assert snap_compare(DdtuneApp(), terminal_size=size, run_before=run_before)


def test_help_scrolls_at_80x24(snap_compare):
    async def run_before(pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("end")  # the last rows of the key table are reachable
        await pilot.pause()

    assert snap_compare(DdtuneApp(), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size,rounds", [((80, 24), None), ((200, 50), None), ((80, 24), 3)],
                         ids=["80x24-done", "200x50-done", "80x24-round-3"])
def test_search_screen(snap_compare, size, rounds):
    """The search screen fed a fixed search (tests/tui/search_fixtures.py): done, the table of measured
    configurations (a failed one in red), the best in green with the `ddtune up` line, the restarts
    against the grid's; and at 80x24 mid-search, the round raced with its candidates, one
    configuration's server loading and the failure's toast."""
    from tests.tui.fixtures import idle_console
    from tests.tui.search_fixtures import SPACE, search_events
    from tui.screens.search import SearchEventPosted, SearchScreen
    from workloads.search.events import RoundProgress
    from workloads.sweep.events import ServerPhaseChanged, SlotStarted
    from workloads.sweep.plan import Slot

    async def run_before(pilot):
        screen = SearchScreen(idle_console(), SPACE.text())
        await pilot.app.push_screen(screen)
        _steady_cursors(screen)
        screen.add_class("-started")
        events = search_events(rounds)
        for event in events:
            screen.post_message(SearchEventPosted(event))
        if rounds is not None:
            plan = events[-1].plan
            slot = Slot(0, SPACE.label(plan.asks[0].point), 1)
            screen.post_message(SearchEventPosted(RoundProgress(plan, SlotStarted(slot, True, None))))
            screen.post_message(SearchEventPosted(RoundProgress(plan, ServerPhaseChanged(slot, "loading-weights",
                                                                                         "shard 3/8"))))
        await pilot.pause()
        if rounds is None:
            pilot.app.clear_notifications()  # the failure's toast (shown mid-search) has gone by the end
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(DdtuneApp(), terminal_size=size, run_before=run_before)


def test_results_list_at_80x24(snap_compare, state_dir):
    """The results list at 80x24: the runs table and the footer's keys (Back, Help, Quit) on screen."""
    from tests.tui.test_results_screen import bench_run
    from tests.workloads.test_report_load import load_run
    from tui.screens.results import ResultsScreen

    runs = state_dir / "runs"
    load_run(runs, "20261130T090000Z-load", 1500.0, 5.5)
    bench_run(runs, "20261130T080000Z-bench", 900.0)

    async def run_before(pilot):
        screen = ResultsScreen()
        await pilot.app.push_screen(screen)
        table = screen.query_one("#runs")
        for _ in range(100):
            if table.row_count:
                break
            await pilot.pause(0.05)
        table.focus()
        await pilot.pause()

    assert snap_compare(DdtuneApp(), terminal_size=(80, 24), run_before=run_before)


def test_sweep_form_with_a_bad_gpu_list_at_80x24(snap_compare):
    """The sweep form at 80x24 refusing a bad GPU list: the whole reason on screen, and the keys."""
    from tests.tui.fixtures import idle_console, laid_out
    from tui.screens.sweep import SweepScreen

    async def run_before(pilot):
        screen = SweepScreen(idle_console(), ["b4-t4-w2048", "b8-t4-w2048", "b16-t8-w2048"])
        await pilot.app.push_screen(screen)
        _steady_cursors(screen)
        screen.query_one("#gpus").value = "0,x"
        screen.query_one("#start").press()
        status = screen.query_one("#status")
        await laid_out(pilot, lambda: "is not a GPU index" in str(status.render()))
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(DdtuneApp(), terminal_size=(80, 24), run_before=run_before)


def test_knob_editor_with_hints_at_80x24(snap_compare):
    """The knob editor at 80x24 with two bad values: each hint whole (wrapped, not cut), and the keys."""
    from backends.knobs.config import config_from_dict
    from backends.knobs import check_knob_texts, knob_form
    from tui.screens.knob_editor import KnobEditor

    config = config_from_dict({}, "defaults")
    current = knob_form(config).values

    async def run_before(pilot):
        editor = KnobEditor(current, {}, lambda values: check_knob_texts(values, config).problems,
                            {name: knob_form(config).help[name] for name in current})
        await pilot.app.push_screen(editor)
        _steady_cursors(editor)
        editor.query_one("#knob-budget").value = "abc"
        editor.query_one("#knob-window").value = "-5"
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(DdtuneApp(), terminal_size=(80, 24), run_before=run_before)


def test_search_form_with_a_bad_space_at_80x24(snap_compare):
    """The search form at 80x24 refusing a bad space: the reason on screen whole, and the keys."""
    from tests.tui.fixtures import idle_console
    from tui.screens.search import SearchScreen

    async def run_before(pilot):
        screen = SearchScreen(idle_console(), "budget=4,8,x topk=2,4")
        await pilot.app.push_screen(screen)
        _steady_cursors(screen)
        screen.start()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(DdtuneApp(), terminal_size=(80, 24), run_before=run_before)

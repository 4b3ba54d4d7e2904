"""Pilot test of the live A/B on the real simulator: load running, Apply window=1024 in the knob
editor; both plots get a marker labelled with the change, and the strip under them shows both
configurations' figures and the change between them; b pins the baseline. A saved no-speculation
run of this model draws the tok/s plot's reference line."""

from __future__ import annotations

import re

import pytest

from backends.knobs.config import load_config
from tests.backends.lifecycle_support import write_config
from tests.workloads.test_no_spec_baseline import load_run
from tests.tui.test_console_pilot import panel, wait_until
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.knob_editor import KnobEditor
from tui.widgets.ab_strip import ABStrip
from tui.widgets.live_plots import CachedPlot, LivePlots
from tui.widgets.requests_table import NO_ACCEPT, NO_ACCEPT_WHY, RequestsTable


def strip_text(app, width=None, height=None) -> str:
    """The strip's lines at its size on screen, or at the one given."""
    strip = app.main.query_one(ABStrip)
    return "\n".join(str(line) for line in strip.lines(width or strip.size.width, height or strip.size.height))


def rendered(app, widget) -> str:
    """What a widget draws, as plain text at its width (line by line for a line-API widget)."""
    from rich.console import Console

    import io

    if isinstance(widget, RequestsTable):
        return "\n".join(widget.render_line(y).text for y in range(widget.size.height))
    console = Console(width=max(widget.size.width, 40), record=True, file=io.StringIO())
    console.print(widget.render())
    return console.export_text()


def plot_text(app, plot_id: str) -> str:
    plots = app.main.query_one(LivePlots)
    plots._dirty = True
    plots.redraw()
    return str(plots.query_one(f"#{plot_id}", CachedPlot).render())


async def test_apply_draws_labelled_markers_and_the_strip_compares_both_configurations(tmp_path, groups, state_dir):
    load_run(state_dir / "runs", "20261101T000000Z-load", 512.0)  # a plain server's run of this model, 8 streams
    config = load_config(write_config(tmp_path))  # the DFLASH simulator, window 2048
    # 1 s windows keep the test short: each configuration needs a few closed windows for its interval
    app = DdtuneApp(ConsoleController(config, simulated=True, load_concurrency=8, load_max_tokens=512,
                                      autostart_load=True, load_window_s=1.0))
    async with app.run_test(size=(200, 50)) as pilot:
        strip = app.main.query_one(ABStrip)

        def figures():
            return strip.comparison

        await wait_until(pilot, lambda: panel(app).phase == "ready" and figures() is not None
                         and figures().current.windows >= 3 and figures().current.requests >= 4,
                         timeout=60, what="the first configuration's figures")
        first_pid = panel(app).pid
        groups.track_state()
        assert "window=2048" in strip_text(app) and "tok/s" in strip_text(app)

        await pilot.press("k")
        editor = app.screen
        assert isinstance(editor, KnobEditor)
        editor.query_one("#knob-window").value = "1024"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid not in (None, first_pid),
                         timeout=60, what="ready on a new pid")
        groups.track_state()
        await wait_until(pilot, lambda: figures().reference is not None and figures().current.windows >= 3
                         and figures().current.requests >= 4, timeout=60, what="the second configuration's figures")

        cmp = figures()
        assert cmp.reference.knobs["window"] == 2048 and cmp.current.knobs["window"] == 1024
        assert cmp.current.marker == "window 2048 -> 1024" and not cmp.pinned
        for figs in (cmp.reference, cmp.current):
            assert figs.tok_s.mean > 0 and figs.tok_s.lo is not None and figs.acceptance.mean > 1
            assert figs.graded > 0 and 0 <= figs.passed <= figs.graded
        assert cmp.tok_s.value == pytest.approx(cmp.current.tok_s.mean / cmp.reference.tok_s.mean)

        wide = strip_text(app)                               # as laid out at 200x50
        header, before, now = wide.splitlines()
        # over the tags: the load's prompts (acceptance is theirs)
        assert header.split() == ["coding", "config", "tok/s", "change", "accept", "change", "pass", "req"]
        assert before.startswith("before") and "window=2048" in before and f"{cmp.reference.tok_s.mean:.0f} ±" in before
        assert now.startswith("now") and "window=1024" in now and f"{cmp.current.tok_s.mean:.0f} ±" in now
        assert re.search(r"[+-]\d+\.\d% \[-?\d+\.\d, -?\d+\.\d\]", now), now
        assert f"{cmp.reference.passed}/{cmp.reference.graded}" in before
        assert f"{cmp.current.passed}/{cmp.current.graded}" in now
        one = strip_text(app, width=78, height=1)           # at 80x24 the strip is one line
        assert "\n" not in one and len(one) <= 78 and "window=1024" in one and "% [" in one, one

        plots = app.main.query_one(LivePlots)
        assert plots.no_spec == (512.0, "load run 20261101T000000Z-load")
        assert "no-spec 512" in plot_text(app, "plot-toks")
        assert [label for _, label in plots.markers] == ["#1 window 2048 -> 1024"]
        assert "window 2048 -> 1024" in plot_text(app, "plot-toks")
        assert "window 2048 -> 1024" in plot_text(app, "plot-accept")

        await pilot.press("b")                               # pin window=1024 as the baseline
        await pilot.pause()
        assert figures().pinned and figures().reference is None
        assert "baseline" in strip_text(app)
        await app.controller.detach(stop_server=True)


async def test_on_0517_the_strip_shows_the_counters_acceptance_labelled(tmp_path, groups, state_dir):
    """sglang 0.5.17 puts no spec field on chat: the strip's acceptance comes from the server's counters
    (ddtune starts it with --enable-metrics) over each window, and says so; before, it showed "-"."""
    from tests.backends.lifecycle_support import FAST

    config = load_config(write_config(tmp_path, extra=(*FAST, "--sim-version", "0.5.17")))
    app = DdtuneApp(ConsoleController(config, simulated=True, load_concurrency=4, load_max_tokens=256,
                                      autostart_load=True, load_window_s=1.0))
    async with app.run_test(size=(200, 50)) as pilot:
        strip = app.main.query_one(ABStrip)
        await wait_until(pilot, lambda: strip.comparison is not None and strip.comparison.current.windows >= 2
                         and strip.comparison.current.acceptance is not None, timeout=60,
                         what="an acceptance on the strip")
        groups.track_state()
        now = strip.comparison.current
        assert now.acceptance_source == "counters" and now.acceptance.mean > 1.5
        assert "(counters)" in strip_text(app)
        assert "(counters)" in strip_text(app, width=78, height=1)
        # the acceptance plot names the client line's source; the requests table says why it has none
        plots = app.main.query_one(LivePlots)
        assert plots.accept_source == "counters"
        plots.add_server_point(0.0, 1.0, None)  # a point: the next redraw draws
        accept = plot_text(app, "plot-accept")
        assert "client 1s (coding): counters" in accept and "server log" in accept
        table = app.main.query_one(RequestsTable)
        await wait_until(pilot, lambda: len(table.rows) > 0, timeout=30, what="a finished request")
        table.flush()
        await pilot.pause()
        assert NO_ACCEPT in rendered(app, table).splitlines()[1] and str(table.border_subtitle).endswith(NO_ACCEPT_WHY)
        await app.controller.detach(stop_server=True)

"""Restart-marker labels after a sweep (issue 22, item 2): crowded markers never write over each other
(before: ``budgebudget 16 -> none``); cut or numbered where crowded, each full label in the log pane."""

from __future__ import annotations

import re

from tests.tui.fixtures import feed
from tui import messages as m
from tui.app import DdtuneApp
from tui.marker_labels import place
from tui.widgets.live_plots import LivePlots
from tui.widgets.log_pane import LogPane

SWEEP_LABELS = ["budget 8 -> 16", "budget 16 -> none", "topk 4 -> 2, budget none -> 8", "window 2048 -> 1024",
                "budget 8 -> 16, window 1024 -> 2048", "topk 2 -> 4"]


def overlapping(placed) -> list:
    return [(a, b) for a in placed for b in placed if a is not b and a.row == b.row
            and a.col < b.end + 1 and b.col < a.end + 1]


def test_crowded_labels_are_laid_out_without_overlap():
    markers = [(10 + 3 * i, f"#{i + 1} {label}") for i, label in enumerate(SWEEP_LABELS)]
    placed = place(markers, columns=80, rows=3)
    assert not overlapping(placed) and all(p.col >= 0 and p.end <= 80 for p in placed)
    assert any(p.text == "#6 topk 2 -> 4" for p in placed)  # the newest keeps its full text
    assert len(placed) == len(markers)  # three rows hold all six, some cut ("…") or as a number
    one_row = place(markers, columns=40, rows=1)
    assert not overlapping(one_row) and all(p.end <= 40 for p in one_row)


async def test_a_sweeps_markers_on_the_plot_never_overlap_and_the_log_has_them_in_full():
    app = DdtuneApp(None)
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app.main, points=60)
        await pilot.pause()
        for i, label in enumerate(SWEEP_LABELS):
            app.main.post_message(m.ConfigMarked(1030.0 + 2 * i, label))  # a restart every two seconds
        await pilot.pause()
        plots = app.main.query_one(LivePlots)
        plots._dirty = True
        plots.redraw()
        assert plots.labels and not overlapping(plots.labels), plots.labels
        plot = plots.toks_plot
        plot.plt.plotsize(plot.size.width, plot.size.height)  # as the widget renders it
        assert len(plots.labels) >= 3  # staggered on three rows
        rendered = re.sub(r"\x1b\[[0-9;]*m", "", plots.toks_plot.plt.build())
        assert "budgebudget" not in rendered and "#6 topk 2 -> 4" in rendered
        log = "\n".join(app.main.query_one(LogPane).lines)
        for i, label in enumerate(SWEEP_LABELS):
            assert f"plot marker #{i + 1} {label}" in log

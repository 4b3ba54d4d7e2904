"""The panels that tick repaint only the cells that changed (tui/widgets/diffed.py): the spans they
refresh hold every changed cell, a GPU's power or a start's elapsed seconds repaint a span of their
row and not the panel, and a change of shape (or a refresh from elsewhere) repaints the panel whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style
from textual.app import App
from textual.geometry import Region

from tests.tui.fixtures import EIGHT_GPUS, LOADING
from tui.views import GpuView
from tui.widgets.diffed import DiffedWidget, cells, changed_regions, changed_span
from tui.widgets.gpu_panel import GpuPanel
from tui.widgets.server_panel import ServerPanel

STYLES = (None, Style(bold=True), Style(color="red"))
segment = st.builds(Segment, st.text(alphabet="ab █°é漢", max_size=6), st.sampled_from(STYLES))
row = st.lists(segment, max_size=5)


def padded(line, width):
    out = cells(line)
    return out + [("", None)] * (width - len(out))


@given(row, row)
def test_a_span_holds_every_changed_cell_and_starts_and_ends_on_one(old, new):
    width = max(len(cells(old)), len(cells(new)))
    a, b = padded(old, width), padded(new, width)
    span = changed_span(old, new)
    if a == b:
        assert span is None
        return
    assert span is not None
    start, end = span
    assert a[:start] == b[:start] and a[end:] == b[end:]  # outside the span the terminal keeps what it shows
    assert a[start] != b[start] and a[end - 1] != b[end - 1]


def test_rows_that_do_not_correspond_repaint_everything():
    one = [Segment("a")]
    assert changed_regions([one], [one, one]) is None
    assert changed_regions([one, one], [one, [Segment("b")]]) == [Region(0, 1, 1, 1)]
    assert changed_regions([one], [[Segment("a", Style(bold=True))]]) == [Region(0, 0, 1, 1)]  # a style is a change


class Panels(App):
    def compose(self):
        yield ServerPanel()
        yield GpuPanel()


def spy(panel: DiffedWidget) -> list[tuple[Region, ...]]:
    """Record each refresh's regions (() for a whole repaint) from now on."""
    seen: list[tuple[Region, ...]] = []
    refresh = panel.refresh

    def recording(*regions, **kwargs):
        seen.append(regions)
        return refresh(*regions, **kwargs)

    panel.refresh = recording  # type: ignore[method-assign]
    return seen


async def test_a_power_change_repaints_a_span_of_its_row_only():
    app = Panels()
    async with app.run_test(size=(160, 30)) as pilot:
        gpu = app.query_one(GpuPanel)
        gpu.view = EIGHT_GPUS  # a new shape: repainted whole, and so is the next view (nothing known drawn)
        await pilot.pause()
        gpu.view = GpuView(**{**EIGHT_GPUS.__dict__, "host": "host: cpu 13%"})
        await pilot.pause()
        seen = spy(gpu)
        rows = list(EIGHT_GPUS.rows)
        rows[3] = type(rows[3])(**{**rows[3].__dict__, "power_w": 98.0})
        gpu.view = GpuView(**{**EIGHT_GPUS.__dict__, "host": "host: cpu 13%", "rows": tuple(rows)})
        await pilot.pause()
        (regions,) = seen
        (region,) = regions
        assert region.y == 3 and region.height == 1  # the fourth GPU's row, nothing else
        assert 0 < region.width <= 4  # " 612W" became "  98W": the digits that differ
        gpu.view = EIGHT_GPUS  # the same again, and then a GPU fewer: the panel changes height
        await pilot.pause()
        gpu.view = GpuView(**{**EIGHT_GPUS.__dict__, "rows": EIGHT_GPUS.rows[:7]})
        await pilot.pause()
        assert seen[-1] == ()  # a whole repaint (and a layout) for the new shape


async def test_elapsed_seconds_repaint_a_span_and_a_refresh_from_elsewhere_is_whole():
    app = Panels()
    async with app.run_test(size=(160, 30)) as pilot:
        server = app.query_one(ServerPanel)
        server.view = LOADING
        await pilot.pause()
        server.view = LOADING.__class__(**{**LOADING.__dict__, "elapsed_s": 13})
        await pilot.pause()
        seen = spy(server)
        server.view = LOADING.__class__(**{**LOADING.__dict__, "elapsed_s": 14})
        await pilot.pause()
        (regions,) = seen
        (region,) = regions
        assert region.y == 1 and region.width <= 2  # "13s elapsed" -> "14s elapsed"
        server.refresh()  # e.g. the screen telling it the simulator's wrong rate: nothing known is kept
        server.view = LOADING.__class__(**{**LOADING.__dict__, "elapsed_s": 15})
        await pilot.pause()
        assert seen[-2:] == [(), ()]

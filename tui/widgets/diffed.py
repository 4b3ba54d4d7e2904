"""A widget that repaints only the cells that changed since it was last drawn.

Textual repaints a refreshed widget whole: every row of its region goes to the terminal again,
borders and padding included, although a panel that ticks once a second changes a few cells (a
GPU's power, the host's CPU per cent). At rest that was most of what the console wrote. A
``DiffedWidget`` renders its new content to lines itself, compares them with the lines of its last
draw, and refreshes only the span of each row that differs (``Widget.refresh(*regions)``, public
API: Textual then re-renders the widget but writes only those regions), as curses-based monitors
like nvitop do. A change of its height, its width, or a refresh from anywhere else repaints it whole.

Subclasses render Rich renderables and call ``repaint_changed()`` where they would call
``refresh()``; declare their reactive state with ``repaint=False`` so Textual does not refresh
them whole first.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.widget import Widget

Line = list[Segment]


def cells(line: Line) -> list[tuple[str, Style | None]]:
    """One (character, style) per terminal cell; a wide character's second cell is ("", style)."""
    out: list[tuple[str, Style | None]] = []
    for text, style, _ in line:
        if text.isascii():
            out.extend((ch, style) for ch in text)
            continue
        for ch in text:
            out.append((ch, style))
            if cell_len(ch) == 2:
                out.append(("", style))
    return out


def changed_span(old: Line, new: Line) -> tuple[int, int] | None:
    """The first and past-the-last cell where two rows differ, cell by cell at the same columns (a
    shorter row ends in blank cells); None when they draw the same."""
    if old == new:
        return None
    a, b = cells(old), cells(new)
    width = max(len(a), len(b))
    a += [("", None)] * (width - len(a))
    b += [("", None)] * (width - len(b))
    differ = [x for x in range(width) if a[x] != b[x]]
    return (differ[0], differ[-1] + 1) if differ else None


def changed_regions(old: list[Line], new: list[Line]) -> list[Region] | None:
    """The regions (content coordinates) where ``new`` differs from ``old``; None when the rows do
    not correspond (a different number of them): then everything is new."""
    if len(old) != len(new):
        return None
    regions = []
    for y, (before, after) in enumerate(zip(old, new, strict=True)):
        span = changed_span(before, after)
        if span is not None:
            regions.append(Region(span[0], y, span[1] - span[0], 1))
    return regions


class DiffedWidget(Widget):
    """``repaint_changed()`` refreshes the cells that changed; ``refresh()`` still repaints it whole."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._drawn: tuple[int, list[Line]] | None = None  # (width, rows) of the last draw
        self._diffing = False

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> DiffedWidget:
        if repaint and not regions and not self._diffing:
            self._drawn = None  # the screen will show a draw this did not see: compare with nothing
        super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        return self

    def rendered_rows(self, width: int) -> list[Line]:
        console = self.app.console
        options = self.app.console_options.update(highlight=False, width=width, height=None)
        segments = console.render(self.render(), options.update_width(width))  # type: ignore[arg-type]
        return list(Segment.split_and_crop_lines(segments, width, include_new_lines=False, pad=True))

    def repaint_changed(self) -> None:
        """Refresh only the spans of rows that differ from the last draw (all of it when the number
        of rows or the width changed, or nothing is known of the last draw)."""
        width = self.content_size.width
        if not self.is_mounted or width <= 0:
            self.refresh()
            return
        lines = self.rendered_rows(width)
        drawn, self._drawn = self._drawn, (width, lines)
        regions = changed_regions(drawn[1], lines) if drawn is not None and drawn[0] == width else None
        self._diffing = True
        try:
            if regions is None:
                self.refresh()
            elif regions:
                self.refresh(*regions)
        finally:
            self._diffing = False

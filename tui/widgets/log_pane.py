"""The server log pane: a line-API view over a bounded deque of classified log lines.

Lines arrive already classified (``backends.logs.kind.LogLine``): the filter and the colours read
``line.kind`` and ``line.event``, never the text, so "is this an error" is decided once, in
``logkind.classify``. The pane draws only the rows on screen (``render_line``), caches the rendered
rows by text, and holds at most ``max_lines`` lines. Built on Textual's public API only: a
``ScrollView`` whose ``virtual_size`` is set once per batch; at steady state (the deque full, no
longer line) the size does not change, so a batch repaints the pane and re-lays out nothing.

Filters (``f``): all; errors = fatal + error + warning; draft; decode. ddtune's own notes show under
every filter, so a filtered view still says where the server was restarted.
Search (``/``): case-insensitive unless the query has a capital; matches are lit, Enter and ``n``
go to the next matching line, ``N`` to the previous one, Escape closes the prompt (matches stay lit
for ``n``/``N``; an empty search clears them).
Follow: new lines scroll the pane only while it is at the bottom; scrolled up, the lines under the
reader stay put and the subtitle counts what arrived below (End follows again, from the first column).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Offset, Region, Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from backends.logs import LogLine
from tui.literal import cell_width, literal
from tui.widgets.log_text import FILTER_KINDS, FILTERS, display_text, search_pattern

GROW_ROWS, GROW_COLS = 128, 32  # the virtual size grows in steps: each change costs a screen layout
_PARTS = ("match", "current-match")  # the search's, over the line's own tones (LogLine.TONES)


class LogPane(ScrollView, can_focus=True):
    """The server log: ``append`` batches of ``LogLine``, ``note`` ddtune's own lines."""

    ALLOW_SELECT = True
    COMPONENT_CLASSES = {f"log-pane--{name}" for name in LogLine.TONES + _PARTS}
    DEFAULT_CSS = """
    LogPane {
        background: $surface;
        color: $foreground;
        overflow: auto auto;
        &:focus { background-tint: $foreground 5%; }
        & > .log-pane--fatal { color: $text-error; text-style: bold; }
        & > .log-pane--error { color: $text-error; }
        & > .log-pane--warning { color: $text-warning; }
        & > .log-pane--draft { color: ansi_magenta; }
        & > .log-pane--phase { color: ansi_cyan; }
        & > .log-pane--http { color: $text-muted; }
        & > .log-pane--ddtune { color: $text-primary; text-style: bold; }
        & > .log-pane--stamp { color: $text-muted; }
        & > .log-pane--ready { color: $text-success; text-style: bold; }
        & > .log-pane--draft-off { color: $text-error; text-style: bold; }
        & > .log-pane--window-off { background: $error; color: $foreground; text-style: bold; }
        & > .log-pane--window-on { color: $text-success; text-style: bold; }
        & > .log-pane--accept { color: $text-warning; }
        & > .log-pane--match { background: $warning 45%; }
        & > .log-pane--current-match { background: $warning; color: $background; text-style: bold; }
    }
    """

    def __init__(self, max_lines: int = 2000, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        if max_lines < 1:
            raise ValueError("max_lines must be positive")
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        self._history: deque[LogLine] = deque(maxlen=max_lines)  # every line, newest last
        self._shown: deque[LogLine] = deque()  # the lines the filter keeps: a subsequence of _history
        self._gone = 0  # lines that fell off the top of _shown since the last rebuild
        self._width = 0  # widest shown line, in cells
        self._filter = "all"
        self._query = ""
        self._pattern: re.Pattern[str] | None = None
        self._current: int | None = None  # the current match, as _gone + its index in _shown
        self._follow = True
        self._unseen = 0  # lines that arrived below while scrolled up
        self._strips: LRUCache[tuple[str, str, str, bool], Strip] = LRUCache(1024)
        self._styles: dict[str, Style] = {}
        self._paint: tuple[Offset, int, Style, Selection | None] | None = None  # during render_lines
        self.border_title = "log: all"

    # --- what others read -----------------------------------------------------------------
    @property
    def filter(self) -> str:
        return self._filter

    @property
    def search_query(self) -> str:
        """What ``/`` looks for ("" when no search is lit). Not ``query``: that is DOMNode.query()."""
        return self._query

    @property
    def follow(self) -> bool:
        """True while new lines scroll the pane (it is at the bottom)."""
        return self._follow

    @property
    def lines(self) -> tuple[str, ...]:
        """The texts of the lines the filter keeps, oldest first."""
        return tuple(line.text for line in self._shown)

    @property
    def line_count(self) -> int:
        return len(self._shown)

    @property
    def current_match(self) -> int | None:
        """The row (index into ``lines``) of the current search match, if any."""
        return None if self._current is None else self._current - self._gone

    # --- lines in -------------------------------------------------------------------------
    def append(self, lines: Sequence[LogLine]) -> None:
        """Add a batch: one size update and one repaint, however many lines."""
        if not lines:
            return
        follow = self._follow and not self.is_vertical_scrollbar_grabbed
        keep = FILTER_KINDS[self._filter]
        history, shown = self._history, self._shown
        width, added, dropped = self._width, 0, 0
        for line in lines:
            if len(history) == self.max_lines and shown and shown[0] is history[0]:
                shown.popleft()  # keep _shown within _history: memory is bounded by max_lines
                dropped += 1
            history.append(line)
            if keep is None or line.kind in keep:
                shown.append(line)
                added += 1
                width = max(width, cell_width(display_text(line.text)))
        if not (added or dropped):
            return
        self._width = width
        self._gone += dropped
        if self._current is not None and self._current < self._gone:
            self._current = None
        self._size_to(width, len(shown))
        if follow:
            self._to_end()
        else:
            self._unseen += added
            if dropped:  # the lines under the reader moved up: move the view (and a scroll under way) with them
                self.scroll_to(y=max(0, self.scroll_target_y - dropped), animate=False)
            self._show_status()
        self.refresh()

    def _size_to(self, width: int, rows: int) -> None:
        """Set the virtual size in steps of GROW_ROWS x GROW_COLS: a changed virtual size relayouts
        the whole screen (every widget repaints), and per batch that was most of the console's cost
        under load. The scroll limits below keep to the real content, so the slack is never seen."""
        view = self.container_size
        # steps only once the content overflows the view: a scrollbar is shown by then anyway
        height = rows if rows <= view.height else min(max(self.max_lines, rows), -(-rows // GROW_ROWS) * GROW_ROWS)
        width = width if width <= view.width else -(-width // GROW_COLS) * GROW_COLS
        size = Size(width, height)
        if size != self.virtual_size:
            self.virtual_size = size

    @property
    def max_scroll_y(self) -> int:
        return max(0, len(self._shown) - (self.container_size.height - self.scrollbar_size_horizontal))

    @property
    def max_scroll_x(self) -> int:
        return max(0, self._width - (self.container_size.width - self.scrollbar_size_vertical))

    def note(self, text: str) -> None:
        """A line of ddtune's own (kind ``ddtune``): shown under every filter."""
        self.append([LogLine.ddtune(text)])

    # --- filter ---------------------------------------------------------------------------
    def set_filter(self, name: str) -> None:
        if name not in FILTER_KINDS:
            raise ValueError(f"unknown log filter {name!r}")
        self._filter = name
        self.border_title = f"log: {name}"
        self._rebuild()

    def cycle_filter(self) -> str:
        self.set_filter(FILTERS[(FILTERS.index(self._filter) + 1) % len(FILTERS)])
        return self._filter

    def _rebuild(self) -> None:
        keep = FILTER_KINDS[self._filter]
        self._shown = deque(line for line in self._history if keep is None or line.kind in keep)
        self._gone, self._current, self._unseen = 0, None, 0
        self._width = max((cell_width(display_text(line.text)) for line in self._shown), default=0)
        self._size_to(self._width, len(self._shown))
        self._follow = True
        self.scroll_to(x=0, animate=False, immediate=self.size.height > 0, force=True)  # the widths changed
        self._to_end()
        self._show_status()
        self.refresh()

    # --- search ---------------------------------------------------------------------------
    def highlight(self, query: str) -> None:
        """Light every match of ``query`` without moving (the prompt calls this as you type)."""
        if query != self._query:
            self._query, self._pattern, self._current = query, search_pattern(query), None
            self._show_status()
            self.refresh()

    def search(self, query: str) -> bool:
        """Light ``query`` and go to its next match; an empty query clears the search."""
        self.highlight(query)
        return self.next_match() if query else False

    def next_match(self) -> bool:
        return self._jump(+1)

    def previous_match(self) -> bool:
        return self._jump(-1)

    def _jump(self, step: int) -> bool:
        pattern, rows = self._pattern, list(self._shown)
        if pattern is None or not rows:
            return False
        row = self.current_match
        if row is not None:
            start = row + step
        else:  # from the top of the view forward, or from its bottom backward
            top = round(self.scroll_y)
            start = top if step > 0 else min(len(rows), top + self.scrollable_content_region.height) - 1
        for n in range(len(rows)):
            i = (start + step * n) % len(rows)
            found = pattern.search(display_text(rows[i].text))
            if found:
                self._current = self._gone + i
                self._reveal(i, cell_width(found.string[:found.start()]), cell_width(found.group()))
                self._show_status()
                self.refresh()
                return True
        self.app.bell()
        return False

    def _reveal(self, row: int, column: int, length: int) -> None:
        view = self.scrollable_content_region
        x = y = None
        if not self.scroll_y <= row < self.scroll_y + view.height:
            y = max(0, row - view.height // 2)
        if not (self.scroll_x <= column and column + length <= self.scroll_x + view.width):
            x = max(0, column - view.width // 4)
        self.scroll_to(x=x, y=y, animate=False)

    def _show_status(self) -> None:
        parts = []
        if self._pattern is not None:
            hits = [i for i, line in enumerate(self._shown) if self._pattern.search(display_text(line.text))]
            row = self.current_match
            at = f"{hits.index(row) + 1}/" if row in hits else ""
            parts.append(f"/{self._query}: {at}{len(hits)} lines" if hits else f"/{self._query}: no match")
        if self._unseen and not self._follow:
            parts.append(f"{self._unseen} new below (End follows)")
        if self.scroll_x >= 1:
            parts.append(f"→ col {round(self.scroll_x) + 1}")
        self.border_subtitle = literal("  ".join(parts))  # the query as typed: text, not markup

    # --- scrolling ------------------------------------------------------------------------
    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        follow = new_value >= self.max_scroll_y
        if follow != self._follow:
            self._follow = follow
            if follow:
                self._unseen = 0
            self._show_status()

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        if old_value >= 1 or new_value >= 1:  # the column shown in the subtitle
            self._show_status()

    def action_scroll_end(self) -> None:
        """End: back to the tail at once, from its first column, following it again (an animated
        scroll would race the lines). A search that revealed a match far right left the view there,
        and every short line of the tail blank."""
        self._follow, self._unseen = True, 0
        self.scroll_to(x=0, animate=False, immediate=self.size.height > 0, force=True)
        self._to_end()
        self._show_status()

    def on_resize(self, event: events.Resize) -> None:
        if self._follow:  # stay at the tail when the pane changes size
            self._to_end()

    def _to_end(self) -> None:
        """Scroll to the last line now, in this frame. ``force``: the scrollbar that the new size
        calls for is only shown at the next layout, and until then Textual would refuse to scroll."""
        self.scroll_end(animate=False, immediate=self.size.height > 0, force=True, x_axis=False)

    # --- drawing --------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()

    def selection_updated(self, selection: Selection | None) -> None:
        self._strips.clear()
        self.refresh()

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(line.text for line in self._shown)), "\n"

    def render_lines(self, crop: Region) -> list[Strip]:
        # what every line of this paint shares, read once (the base style walks every ancestor's styles)
        self._paint = (self.scroll_offset, self.size.width, self.rich_style, self.text_selection)
        try:
            return super().render_lines(crop)
        finally:
            self._paint = None

    def render_line(self, y: int) -> Strip:
        (scroll_x, scroll_y), width, base, selection = self._paint or (
            self.scroll_offset, self.size.width, self.rich_style, self.text_selection)
        row = scroll_y + y
        if row >= len(self._shown):
            return Strip.blank(width, base)
        line = self._shown[row]
        current = self._current == self._gone + row
        key = (line.text, line.kind, self._query, current)
        strip = self._strips.get(key) if selection is None else None
        if strip is None:
            text = self._styled(line, current, base)
            if selection is not None and (span := selection.get_span(row)) is not None:
                start, end = span
                selected = self.screen.get_component_rich_style("screen--selection")
                text.stylize(selected, start, len(text) if end == -1 else end)
            strip = Strip(text.render(self.app.console), text.cell_len)
            if selection is None:
                self._strips[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, row)

    def _style(self, name: str) -> Style:
        """A component's style as a span: its colours resolved against the pane (so ``$text-muted``
        is a real grey), its background only where the component sets one."""
        style = self._styles.get(name)
        if style is None:
            component = f"log-pane--{name}"
            own = self.get_component_rich_style(component, partial=True)
            full = self.get_component_rich_style(component)
            colours = Style.from_color(full.color if own.color else None, full.bgcolor if own.bgcolor else None)
            style = self._styles[name] = own.without_color + colours
        return style

    def _styled(self, line: LogLine, current: bool, base: Style) -> Text:
        """One row: each of its tones (``LogLine.tones``: the stamp muted, the message in its kind's
        colour, then the spans that matter) in its style, then the search's matches."""
        plain = display_text(line.text)
        text = Text(plain, no_wrap=True, end="")
        text.stylize(base)
        for tone in line.tones(plain):
            text.stylize(self._style(tone.name), tone.start, tone.end)
        if self._pattern is not None:
            lit = self._style("current-match" if current else "match")
            for found in self._pattern.finditer(plain):
                text.stylize(lit, found.start(), found.end())
        return text

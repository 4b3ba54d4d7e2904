"""Recent requests of the live coding load, newest first, redrawn at most once a second.

A line-API widget over the rows that fit: unlike a DataTable it never changes its virtual size, so
a busy load costs one repaint of this box a second and no screen re-layout; and unlike a Rich
``Table`` rebuilt each second (measuring and rendering every cell: most of the console's CPU under
load) each row is drawn once and kept (an LRU of strips by the row's text and the columns), so a
new request draws one row and the others move down as they were. The columns keep to the widest
text among the rows kept (not only those shown), so they hold still while rows scroll by; slack
goes after the verdict, and where the box is too narrow the problem and then the verdict are cut
with an ellipsis.
When no request shown carries its own acceptance (sglang before 0.5.19 puts none on chat), the
accept column says so in one short note (``n/a``, and why under the box) instead of a column of
dashes; the plots and the A/B strip still have the server's figure.
Focused, a cursor picks a row (up/down or k/j, or a click) and Enter asks the screen to open it: the
verdict's reason (the grader's detail line, or the request's error). On the simulator the title
says what share of answers it gets wrong on purpose, so a `fail` there is no surprise.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tui.literal import cell_width, literal

VERDICT_STYLE = {"pass": "green", "fail": "red", "error": "red", "timeout": "red",
                 "no_code": "yellow", "truncated": "yellow", "cancelled": "grey50"}
COLUMNS: tuple[tuple[str, bool], ...] = (  # (header, right-aligned)
    ("problem", False), ("tokens", True), ("tok/s", True), ("accept", True), ("ttft", True), ("verdict", False))
PROBLEM, ACCEPT, VERDICT = 0, 3, 5
CUT_TO = {PROBLEM: 8, VERDICT: 7}  # a narrow box cuts these, in this order, down to these widths


NO_ACCEPT = "n/a"  # the accept column's note, and why under the box: chat has no per-request acceptance before 0.5.19
NO_ACCEPT_WHY = "accept: none per request before sglang 0.5.19"


def no_accept(rows: list[dict[str, Any]]) -> bool:
    """No finished request among ``rows`` carries its own acceptance (cancelled ones say nothing)."""
    done = [r for r in rows if not str(r.get("verdict")).startswith("cancel")]
    return bool(done) and all(r.get("accept_len") is None for r in done)


Cells = tuple[str, str, str, str, str, str]


def row_cells(row: dict[str, Any]) -> Cells:
    """A row's six texts as shown (the accept column's ``n/a`` note is the table's, not the row's)."""
    accept, ttft = row.get("accept_len"), row.get("ttft_s")
    return (str(row.get("problem", "?"))[:18], str(row.get("tokens", "-")), f"{row.get('tok_s') or 0.0:.0f}",
            "-" if accept is None else f"{accept:.2f}", "-" if ttft is None else f"{ttft * 1000:.0f}ms",
            row.get("verdict") or "-")


HEADER_WIDTHS = tuple(cell_len(header) for header, _ in COLUMNS)


def text_widths(cells: Cells) -> tuple[int, ...]:
    return tuple(cell_width(text) for text in cells)


def column_widths(rows: list[Cells], width: int) -> tuple[int, ...]:
    """Each column's text width: its widest text (or header), one space either side, and the
    slack shared among the columns in proportion to their widths (each share rounded up, in
    order, from what is left: the table fills the box as a Rich ``Table(expand=True)`` did). Where
    that is wider than ``width``, the problem and then the verdict column are cut (to CUT_TO)."""
    return fit_columns([text_widths(cells) for cells in rows], width)


def fit_columns(rows: list[tuple[int, ...]], width: int) -> tuple[int, ...]:
    """``column_widths`` from each row's text widths (``text_widths``, kept per row as it arrives)."""
    widths = [max(column) for column in zip(HEADER_WIDTHS, *rows, strict=True)]
    over = sum(widths) + 2 * len(widths) - width
    for i, least in CUT_TO.items():
        cut = min(max(over, 0), widths[i] - least)
        if cut > 0:
            widths[i] -= cut
            over -= cut
    left, weight = max(-over, 0), sum(widths) + 2 * len(widths)
    for i, w in enumerate(widths):
        share = -(-(w + 2) * left // weight) if weight else left
        widths[i] += share
        left, weight = left - share, weight - (w + 2)
    return tuple(widths)


def fit(text: str, width: int, right: bool) -> str:
    if cell_len(text) > width:
        text = text[:max(width - 1, 0)] + "…" if width > 0 else ""
    pad = " " * max(width - cell_len(text), 0)
    return pad + text if right else text + pad


class RequestsTable(Widget, can_focus=True):
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Newer", show=False, id="requests.newer"),
        Binding("down,j", "cursor(1)", "Older", show=False, id="requests.older"),
        Binding("enter", "open", "Why", id="requests.open"),
    ]

    class Opened(Message):
        """The operator asked for one request's detail (Enter on its row)."""

        def __init__(self, row: dict[str, Any]) -> None:
            super().__init__()
            self.row = row

    def __init__(self, max_rows: int = 100, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: deque[dict[str, Any]] = deque(maxlen=max_rows)
        self._cells: deque[Cells] = deque(maxlen=max_rows)  # each row's texts, made once, beside it
        self._widths: deque[tuple[int, ...]] = deque(maxlen=max_rows)  # and their widths
        self._added = self._flushed = 0  # rows added ever, and as of the last flush (newer ones wait for the next)
        self._frame: tuple[tuple, list[dict[str, Any]], list[Cells], tuple[int, ...], bool, int, Style] | None = None
        self._strips: LRUCache[tuple, Strip] = LRUCache(256)
        self.passed = 0
        self.total = 0
        self.sim_wrong: float | None = None  # on the simulator: its --sim-wrong-rate
        self.picked: dict[str, Any] | None = None  # the cursor's row (the newest when none)
        self._dirty = False
        self.load_state = ""  # the load's state ("load: on (8 streams)"), one part of the subtitle

    def set_load_state(self, text: str) -> None:
        self.load_state = text
        self._subtitle()

    def _subtitle(self) -> None:
        """One owner of the subtitle: the load's state, then why no request shows acceptance."""
        parts = [self.load_state, NO_ACCEPT_WHY if no_accept(list(self.rows)) else ""]
        self.border_subtitle = literal(" · ".join(p for p in parts if p))

    def add_request(self, row: dict[str, Any]) -> None:
        """Count it now; show it at the next flush. A request a restart cancelled is shown, never scored."""
        verdict = row.get("verdict") or "-"
        if not verdict.startswith("cancelled"):
            self.total += 1
            self.passed += verdict == "pass"
        self.rows.append(row)
        cells = row_cells(row)
        self._cells.append(cells)
        self._widths.append(text_widths(cells))
        self._added += 1
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._flushed = self._added
        self.border_title = f"requests: {self.passed}/{self.total} pass" + self.sim_note()
        self._subtitle()
        self.refresh()

    def sim_note(self) -> str:
        return "" if self.sim_wrong is None else f" · sim: {self.sim_wrong:.0%} wrong on purpose"

    def shown(self) -> list[dict[str, Any]]:
        """The rows on screen (those that fit, as of the last flush), newest first."""
        return self._frame_now()[0]

    def _cursor(self, shown: list[dict[str, Any]]) -> int:
        return next((i for i, row in enumerate(shown) if row is self.picked), 0)

    def action_cursor(self, step: int) -> None:
        shown = self.shown()
        if shown:
            self.picked = shown[min(max(self._cursor(shown) + step, 0), len(shown) - 1)]
            self.refresh()

    def action_open(self) -> None:
        shown = self.shown()
        if shown:
            self.post_message(self.Opened(shown[self._cursor(shown)]))

    def on_click(self, event: events.Click) -> None:
        shown = self.shown()
        if 1 <= event.y <= len(shown):  # under the header row
            self.picked = shown[event.y - 1]
            self.refresh()

    def _frame_now(self) -> tuple[list[dict[str, Any]], list[Cells], tuple[int, ...], bool, int, Style]:
        """What this draw shows: the rows, their texts, the columns, whether accept is ``n/a``, the
        cursor's row and the base style; worked out once per flush, size, focus, cursor move or style
        change, not per line (the base style walks every ancestor's styles)."""
        key = (self._flushed, self.size, self.has_focus, id(self.picked))
        if self._frame is None or self._frame[0] != key:
            fit = max(self.size.height - 1, 0)
            new = min(self._added - self._flushed, len(self.rows))  # rows the next flush shows
            rows, cells = list(self.rows), list(self._cells)
            upto = len(rows) - new
            shown = rows[max(upto - fit, 0):upto][::-1] if fit else []
            shown_cells = cells[max(upto - fit, 0):upto][::-1] if fit else []
            none = no_accept(shown)
            cursor = self._cursor(shown) if self.has_focus else -1
            self._frame = (key, shown, shown_cells, fit_columns(list(self._widths), self.size.width), none, cursor,
                           self.rich_style)
        return self._frame[1:]

    def render_line(self, y: int) -> Strip:
        shown, cells, widths, none, cursor, base = self._frame_now()  # worked out once per frame key
        width = self.size.width
        if y == 0:
            texts: Cells = tuple(header for header, _ in COLUMNS)  # type: ignore[assignment]
            key: tuple = ("header", widths, width, base)
        elif y <= len(shown):
            texts = cells[y - 1]
            if none:  # the note once, on the newest row; blank below it
                texts = (*texts[:ACCEPT], NO_ACCEPT if y == 1 else "", *texts[ACCEPT + 1:])  # type: ignore[assignment]
            key = (texts, widths, width, base, y - 1 == cursor, none and y == 1)
        else:
            return Strip.blank(width, base)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._draw(texts, widths, width, base, header=y == 0,
                                                   cursor=y > 0 and y - 1 == cursor, note=none and y == 1)
        return strip

    def _draw(self, texts: Cells, widths: tuple[int, ...], width: int, base: Style, *, header: bool,
              cursor: bool, note: bool) -> Strip:
        line = Text(no_wrap=True, end="")
        for i, ((_, right), text, w) in enumerate(zip(COLUMNS, texts, widths, strict=True)):
            style = ""
            if not header and i == VERDICT:
                style = VERDICT_STYLE.get(text, "")
            elif note and i == ACCEPT:
                style = "dim"
            line.append(" ")
            line.append(fit(text, w, right), style)  # Text: what the server says is no markup
            line.append(" ")
        line.pad_right(max(width - line.cell_len, 0))
        line.truncate(width)
        line.stylize_before(base)
        if header:
            line.stylize("bold")
        if cursor:
            line.stylize("reverse")
        return Strip(line.render(self.app.console), line.cell_len).crop_extend(0, width, base)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # the theme's colours are in the kept rows
        self._frame = None

"""Recent requests of the live coding load, newest first, redrawn at most once a second.

A plain widget that renders a Rich table of the rows that fit: unlike a DataTable it never changes
its virtual size, so a busy load costs one repaint of this box a second and no screen re-layout.
When no request shown carries its own acceptance (sglang before 0.5.19 puts none on chat), the
accept column says so in one short note (``n/a``, and why under the box) instead of a column of
dashes; the plots and the A/B strip still have the server's figure.
Focused, a cursor picks a row (up/down, or a click) and Enter asks the screen to open it: the
verdict's reason (the grader's detail line, or the request's error). On the simulator the title
says what share of answers it gets wrong on purpose, so a `fail` there is no surprise.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget

from tui.literal import literal

VERDICT_STYLE = {"pass": "green", "fail": "red", "error": "red", "timeout": "red",
                 "no_code": "yellow", "truncated": "yellow", "cancelled (restart)": "grey50"}
COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("problem", "left"), ("tokens", "right"), ("tok/s", "right"), ("accept", "right"), ("ttft", "right"),
    ("verdict", "left"))


NO_ACCEPT = "n/a"  # the accept column's note, and why under the box: chat has no per-request acceptance before 0.5.19
NO_ACCEPT_WHY = "accept: none per request before sglang 0.5.19"


def no_accept(rows: list[dict[str, Any]]) -> bool:
    """No finished request among ``rows`` carries its own acceptance (cancelled ones say nothing)."""
    done = [r for r in rows if not str(r.get("verdict")).startswith("cancel")]
    return bool(done) and all(r.get("accept_len") is None for r in done)


class RequestsTable(Widget, can_focus=True):
    BINDINGS = [
        Binding("up", "cursor(-1)", "Newer", show=False, id="requests.newer"),
        Binding("down", "cursor(1)", "Older", show=False, id="requests.older"),
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
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self.border_title = f"requests: {self.passed}/{self.total} pass" + self.sim_note()  # repaints the box
        self._subtitle()

    def sim_note(self) -> str:
        return "" if self.sim_wrong is None else f" · sim: {self.sim_wrong:.0%} wrong on purpose"

    def shown(self) -> list[dict[str, Any]]:
        """The rows that fit, newest first."""
        fit = max(self.size.height - 1, 0)
        return list(self.rows)[-fit:][::-1] if fit else []

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

    def render(self) -> Table:
        table = Table(box=None, expand=True, padding=(0, 1), header_style="bold")
        for name, justify in COLUMNS:
            table.add_column(name, justify=justify, no_wrap=True)
        shown = self.shown()
        none = no_accept(shown)
        cursor = self._cursor(shown) if self.has_focus else -1
        for n, row in enumerate(shown):
            verdict = row.get("verdict") or "-"
            accept = row.get("accept_len")
            ttft = row.get("ttft_s")
            table.add_row(
                literal(str(row.get("problem", "?"))[:18]), literal(row.get("tokens", "-")),
                f"{row.get('tok_s') or 0.0:.0f}",
                (Text(NO_ACCEPT, "dim") if n == 0 else "") if none else "-" if accept is None else f"{accept:.2f}",
                "-" if ttft is None else f"{ttft * 1000:.0f}ms",
                Text(verdict, VERDICT_STYLE.get(verdict, "")),
                style="reverse" if n == cursor else None,
            )
        return table

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

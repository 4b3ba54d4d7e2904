"""Recent requests of the live coding load, newest first, redrawn at most once a second.

A plain widget that renders a Rich table of the rows that fit: unlike a DataTable it never changes
its virtual size, so a busy load costs one repaint of this box a second and no screen re-layout.
When no request shown carries its own acceptance (sglang before 0.5.19 puts none on chat), the
accept column says so in one short note (``n/a``, and why under the box) instead of a column of
dashes; the plots and the A/B strip still have the server's figure.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text
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


class RequestsTable(Widget):
    def __init__(self, max_rows: int = 100, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: deque[dict[str, Any]] = deque(maxlen=max_rows)
        self.passed = 0
        self.total = 0
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
        self.border_title = f"requests: {self.passed}/{self.total} pass"  # this repaints the box
        self._subtitle()

    def render(self) -> Table:
        table = Table(box=None, expand=True, padding=(0, 1), header_style="bold")
        for name, justify in COLUMNS:
            table.add_column(name, justify=justify, no_wrap=True)
        fit = max(self.size.height - 1, 0)
        shown = list(self.rows)[-fit:][::-1] if fit else []
        none = no_accept(shown)
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
            )
        return table

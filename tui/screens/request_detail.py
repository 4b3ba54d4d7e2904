"""One request of the live load, opened from the requests table (Enter): its verdict and why, the
grader's detail line (e.g. which test failed) or the request's error. Renders only what the load
worker already sent; nothing here does I/O."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.literal import literal
from tui.widgets.requests_table import VERDICT_STYLE


def detail_text(row: dict[str, Any], sim_wrong: float | None = None) -> Text:
    """The request's figures, its verdict and the reason, as plain text (server text is no markup)."""
    verdict = str(row.get("verdict") or "-")
    text = Text()
    text.append(f"{row.get('problem', '?')}  ", "bold")
    text.append(verdict, VERDICT_STYLE.get(verdict, "bold"))
    ttft = row.get("ttft_s")
    text.append(f"\n{row.get('tokens', '-')} tokens, {row.get('tok_s') or 0.0:.0f} tok/s, ttft "
                + ("-" if ttft is None else f"{ttft * 1000:.0f}ms"), "grey70")
    detail = row.get("detail")
    text.append("\n\n")
    text.append_text(literal(str(detail)) if detail else Text("no detail: the grader said nothing more", "grey50"))
    if sim_wrong is not None and verdict == "fail":
        text.append(f"\n\nthe simulator answers {sim_wrong:.0%} of the problems wrong on purpose "
                    "(--sim-wrong-rate): a fail here is expected", "yellow")
    return text


class RequestDetail(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "app.pop_screen", "Close", id="request_detail.close")]
    DEFAULT_CSS = """
    RequestDetail { align: center middle; }
    RequestDetail > Vertical {
        width: 76; max-width: 100%; height: auto; max-height: 100%; border: thick $accent; padding: 0 1;
        background: $surface;
    }
    RequestDetail #request-help { color: $text-muted; margin-top: 1; }
    """

    def __init__(self, row: dict[str, Any], sim_wrong: float | None = None) -> None:
        super().__init__()
        self.row, self.sim_wrong = row, sim_wrong

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(detail_text(self.row, self.sim_wrong), id="request-detail")
            yield Static("Esc or Enter closes", id="request-help")

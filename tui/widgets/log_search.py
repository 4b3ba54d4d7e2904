"""The ``/`` prompt under the log pane (kept apart from the pane, which is only the view)."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

from tui.widgets.log_pane import LogPane


class LogSearch(Input):
    """The ``/`` prompt under the log pane: Enter goes to the next match, Escape closes."""

    BINDINGS = [Binding("escape", "close", "Close search", id="log_search.close")]
    DEFAULT_CSS = """
    LogSearch {
        display: none; height: 1; border: none; padding: 0 1; background: $boost;
        &:focus { border: none; background-tint: $foreground 5%; }
        &.-open { display: block; }
    }
    """

    def __init__(self, pane: LogPane, *, id: str | None = None) -> None:
        super().__init__(placeholder="/ search the log: Enter next match, n/N next/previous, Esc close", id=id)
        self.pane = pane

    def open(self) -> None:
        self.add_class("-open")
        self.focus()

    def action_close(self) -> None:
        self.remove_class("-open")
        self.pane.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.pane.highlight(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.pane.search(event.value)

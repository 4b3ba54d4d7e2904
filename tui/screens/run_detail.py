"""One past run opened from the results screen (Enter): what ``ddtune report`` says of it (a bench
run's cells, a load run's summary and windows, a sweep's report, a search's summary), read by
RunRow.text (workloads.report) in a worker thread; this screen only shows it, its Markdown tables as tables
(tui.report_view: plain text, never markup)."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from tui.report_view import report_view
from workloads.report import RunRow


class RunDetailScreen(Screen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="run_detail.back")]
    DEFAULT_CSS = """
    RunDetailScreen #report { height: auto; padding: 0 1; }
    """

    def __init__(self, row: RunRow) -> None:
        super().__init__()
        self.row = row
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="scroll"):
            yield Static(Text(f"reading {self.row.id}…"), id="report")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#scroll").border_title = f"{self.row.kind} {self.row.id}"
        self.read()

    @work(thread=True, exclusive=True)
    def read(self) -> None:
        text = self.row.text()
        self.app.call_from_thread(self._show, text)

    def _show(self, text: str) -> None:
        self.text = text
        self.query_one("#report", Static).update(report_view(text))
        self.query_one("#scroll").focus()

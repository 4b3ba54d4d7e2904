"""The ddtune Textual app: thin. Screens render, the controller runs workers and posts messages."""

from __future__ import annotations

from typing import Protocol

from textual.app import App
from textual.binding import Binding

from tui.screens.main import MainScreen


class Controller(Protocol):
    """What the app needs from whoever owns the server, the telemetry and the load."""

    def attach(self, app: "DdtuneApp") -> None: ...
    async def detach(self, stop_server: bool) -> None: ...


class DdtuneApp(App):
    TITLE = "ddtune"
    CSS_PATH = "ddtune.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [
        Binding("k", "edit_knobs", "Knobs", id="app.knobs"),
        Binding("l", "toggle_load", "Load", id="app.load"),
        Binding("f", "cycle_log_filter", "Log filter", id="app.log_filter"),
        Binding("r", "results", "Results", id="app.results"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("q", "quit_console", "Quit", id="app.quit"),
    ]

    def __init__(self, controller: Controller | None = None) -> None:
        super().__init__()
        self.controller = controller
        self.main = MainScreen()

    def on_mount(self) -> None:
        self.push_screen(self.main)
        if self.controller is not None:
            self.controller.attach(self)

    def action_cycle_log_filter(self) -> None:
        from tui.widgets.log_pane import LogPane

        name = self.main.query_one(LogPane).cycle_filter()
        self.notify(f"log filter: {name}", timeout=2)

    def action_help(self) -> None:
        self.action_show_help_panel()

    async def action_quit_console(self) -> None:
        self.exit()

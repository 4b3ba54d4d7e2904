"""The main screen: server, GPUs, live plots, recent requests and the log, on one screen."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header

from tui import messages as m
from tui.widgets.ab_strip import ABStrip
from tui.widgets.gpu_panel import GpuPanel
from tui.widgets.live_plots import LivePlots
from tui.widgets.log_pane import LogPane
from tui.widgets.log_search import LogSearch
from tui.widgets.requests_table import RequestsTable
from tui.widgets.server_panel import ServerPanel

LOG_EVERY_S = 1.0  # the log pane takes new lines at most this often (a quiet log's first line at once)


class MainScreen(Screen):
    """Holds no I/O: workers post messages here and the handlers set widget attributes."""

    AUTO_FOCUS = "#log"  # the log's sideways keys first; Tab (or t at 80 columns) reaches the requests

    BINDINGS = [  # the log's search keys work wherever focus is on this screen
        Binding("slash", "search_log", "Search log", show=False, id="main.search_log"),
        Binding("n", "log_match(1)", "Next match", show=False, id="main.next_match"),
        Binding("N", "log_match(-1)", "Previous match", show=False, id="main.previous_match"),
    ]

    def __init__(self) -> None:
        super().__init__()
        # Held, not queried: handlers run per message (cheaper than a DOM query each time), and a
        # message that arrives while the app shuts down finds its widget detached, not missing.
        self.server = ServerPanel(id="server")
        self.gpu = GpuPanel(id="gpu")
        self.plots = LivePlots(id="plots")
        self.strip = ABStrip(id="strip")
        self.requests = RequestsTable(id="requests")
        self.log_pane = LogPane(id="log", max_lines=1000)
        self._log_waiting: deque = deque(maxlen=self.log_pane.max_lines)  # lines for the next show
        self._log_shown_at = float("-inf")

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="⚡")
        with Horizontal(id="top"):
            yield self.server
            yield self.gpu
        with Horizontal(id="middle"):
            with Vertical(id="live"):
                yield self.plots
                yield self.strip
            yield self.requests
        yield self.log_pane
        yield LogSearch(self.log_pane, id="log-search")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.server.border_title = "server"
        self.gpu.border_title = "gpu"
        self.requests.border_title = "requests" + self.requests.sim_note()

    def say_sim_wrong(self, rate: float) -> None:
        """On the simulator: it answers ``rate`` of the coding problems wrong on purpose; say so by the verdicts."""
        self.requests.sim_wrong = self.server.sim_wrong = rate
        self.requests.border_title = str(self.requests.border_title or "requests").split(" · ")[0] \
            + self.requests.sim_note()
        self.server.refresh()

    async def on_gpu_panel_opened(self, message: GpuPanel.Opened) -> None:
        await self.app.run_action("gpu_detail")

    def on_requests_table_opened(self, message: RequestsTable.Opened) -> None:
        from tui.screens.request_detail import RequestDetail

        self.app.push_screen(RequestDetail(message.row, self.requests.sim_wrong))

    def tick(self, n: int) -> None:
        """The app's one periodic tick (1 s): batched widgets show what arrived since the last one."""
        self._show_log()
        self.requests.flush()
        if n % 2 == 0:
            self.plots.redraw()

    def _log(self, lines: Sequence) -> None:
        """Log lines arrive in batches every 0.25 s under a busy server, and each batch scrolls (so
        repaints) the whole pane: a reader gains nothing from more than one scroll a second. A line
        after a quiet second shows at once; the rest wait for the tick (or a phase change)."""
        self._log_waiting.extend(lines)
        if time.monotonic() - self._log_shown_at >= LOG_EVERY_S:
            self._show_log()

    def _show_log(self) -> None:
        if self._log_waiting:
            lines = list(self._log_waiting)
            self._log_waiting.clear()
            self.log_pane.append(lines)
            self._log_shown_at = time.monotonic()

    def action_search_log(self) -> None:
        self.query_one(LogSearch).open()

    def action_log_match(self, step: int) -> None:
        log = self.log_pane
        log.next_match() if step > 0 else log.previous_match()

    # Facts from workers -> widget attributes.
    def on_log_lines_read(self, message: m.LogLinesRead) -> None:
        self._log(message.lines)

    def on_server_changed(self, message: m.ServerChanged) -> None:
        self._show_log()  # the lines that led to a new phase show with it
        self.server.view = message.view
        self.sub_title = f"{message.view.backend}: {message.view.phase}"

    def on_gpu_sampled(self, message: m.GpuSampled) -> None:
        self.gpu.view = message.view

    def on_decode_stats_read(self, message: m.DecodeStatsRead) -> None:
        if message.gen_throughput is not None:
            self.plots.add_server_point(message.t, message.gen_throughput, message.accept_len)

    def on_load_window_updated(self, message: m.LoadWindowUpdated) -> None:
        self.plots.add_load_point(message.t, message.tok_s, message.accept_len, message.tok_s_1s,
                                                 message.approx, message.window_s, message.accept_source)

    def on_comparison_changed(self, message: m.ComparisonChanged) -> None:
        self.strip.show(message.comparison)

    def on_no_spec_baseline_found(self, message: m.NoSpecBaselineFound) -> None:
        self.plots.set_no_spec_baseline(message.tok_s, message.source)

    def on_config_marked(self, message: m.ConfigMarked) -> None:
        self._show_log()  # in order, at once; the plot may cut or drop the label: its full text is here
        self.log_pane.note(f"--- ddtune: plot marker {self.plots.mark(message.t, message.label)}")

    def on_load_source_changed(self, message: m.LoadSourceChanged) -> None:
        self.strip.set_source(message.source)
        self.plots.set_source(message.source)
        self.plots.redraw()

    def on_load_state_changed(self, message: m.LoadStateChanged) -> None:
        table = self.requests
        table.set_load_state(f"load: {'on' if message.running else 'off'} ({message.detail})")
        if not message.running and message.detail not in ("stopped", "duration"):
            self.notify(f"load stopped: {message.detail}", severity="warning")

    def on_request_finished(self, message: m.RequestFinished) -> None:
        self.requests.add_request(message.row)

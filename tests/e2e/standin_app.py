"""A tiny Textual app that stands in for the ddtune console until the real one lands.

    python -m tests.e2e.standin_app                  # a counter: n counts, q quits
    python -m tests.e2e.standin_app --log-rate 50    # plus a Log fed 50 lines/s, flushed at --flush-hz

The harnesses (tests/e2e/tmux.py, benchmarks/console_cost.py, screenshots/make_screenshots.py) are
proved on it; point them at ``python -m tui.cli`` once the console exists.
"""

from __future__ import annotations

import argparse
import time

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Log, Static


class StandinApp(App):
    TITLE = "ddtune stand-in"
    BINDINGS = [("n", "count", "Count"), ("q", "quit", "Quit")]

    def __init__(self, log_rate: float = 0.0, flush_hz: float = 4.0) -> None:
        super().__init__()
        self.log_rate, self.flush_hz = log_rate, flush_hz
        self.count = 0
        self.lines_written = 0
        self.started = 0.0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("count: 0", id="count")
        yield Log(max_lines=1000, id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.started = time.monotonic()
        if self.log_rate > 0:
            self.set_interval(1 / self.flush_hz, self.flush_log)

    def action_count(self) -> None:
        self.count += 1
        self.query_one("#count", Static).update(f"count: {self.count}")

    def flush_log(self) -> None:
        """Write every line due since the last flush in one batch, as the console batches its tail."""
        due = int((time.monotonic() - self.started) * self.log_rate)
        lines = [f"[{n:07d}] decode batch. #running-req: 1, accept len: 6.42, gen throughput (token/s): 312.5"
                 for n in range(self.lines_written, due)]
        self.lines_written = due
        if lines:
            self.query_one("#log", Log).write_lines(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log-rate", type=float, default=0.0, help="log lines per second (default 0: none)")
    parser.add_argument("--flush-hz", type=float, default=4.0, help="log flushes per second (default 4)")
    args = parser.parse_args()
    StandinApp(log_rate=args.log_rate, flush_hz=args.flush_hz).run()


if __name__ == "__main__":
    main()

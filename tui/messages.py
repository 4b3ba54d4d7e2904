"""Messages the console's workers post: past-tense facts, plus a few intents from widgets.

Workers never touch widgets; they post these and the screen sets widget attributes.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from backends.logkind import LogLine
from tui.views import GpuView, ServerView


class LogLinesRead(Message):
    """A batch of server log lines, each classified (``logkind.read_lines``) or a ddtune note."""

    def __init__(self, lines: list[LogLine]) -> None:
        super().__init__()
        self.lines = lines


class ServerChanged(Message):
    """The server's state (phase, pid, knobs, verification) changed."""

    def __init__(self, view: ServerView) -> None:
        super().__init__()
        self.view = view


class GpuSampled(Message):
    def __init__(self, view: GpuView) -> None:
        super().__init__()
        self.view = view


class DecodeStatsRead(Message):
    """A `Decode batch` log line: throughput and acceptance as the server saw them."""

    def __init__(self, t: float, gen_throughput: float, accept_len: float | None) -> None:
        super().__init__()
        self.t, self.gen_throughput, self.accept_len = t, gen_throughput, accept_len


class LoadWindowUpdated(Message):
    """The live coding load's windowed figures (tok/s and acceptance)."""

    def __init__(self, t: float, tok_s: float, accept_len: float | None, in_flight: int) -> None:
        super().__init__()
        self.t, self.tok_s, self.accept_len, self.in_flight = t, tok_s, accept_len, in_flight


class RequestFinished(Message):
    def __init__(self, row: dict[str, Any]) -> None:
        super().__init__()
        self.row = row


class ApplyKnobs(Message):
    """Intent: restart the server with these knob values."""

    def __init__(self, knobs: dict[str, Any]) -> None:
        super().__init__()
        self.knobs = knobs


class ConfigMarked(Message):
    """The server config changed at time t: plots draw a marker so an A/B reads on one timeline."""

    def __init__(self, t: float, label: str) -> None:
        super().__init__()
        self.t, self.label = t, label


class LoadStateChanged(Message):
    def __init__(self, running: bool, detail: str) -> None:
        super().__init__()
        self.running, self.detail = running, detail

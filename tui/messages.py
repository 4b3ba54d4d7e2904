"""Messages the console's controller posts to the main screen: past-tense facts, as dataclasses.

Workers never touch widgets; they post these and the screen sets widget attributes. Messages that
carry only the latest value (server view, GPU sample) replace an unhandled older one of their kind
(``can_replace``), so a busy screen never works through stale states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from backends.core import Phase
from backends.logs import LogLine
from tui.views import GpuView, ServerView
from workloads.live import Comparison


@dataclass
class LogLinesRead(Message):
    """Server log lines (batched by the session's log reader, at most every 0.25 s)."""

    lines: tuple[LogLine, ...]
    skipped: int = 0


@dataclass
class ServerChanged(Message):
    """The server's state (phase, pid, knobs, verification) as the panel shows it."""

    view: ServerView

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ServerChanged)


@dataclass
class GpuSampled(Message):
    view: GpuView

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GpuSampled)


@dataclass
class DecodeStatsRead(Message):
    """A `Decode batch` log line: throughput and acceptance as the server saw them."""

    t: float
    gen_throughput: float | None
    accept_len: float | None


@dataclass
class LoadWindowUpdated(Message):
    """The live coding load's windowed figures: the rolling (5 s) tok/s and acceptance the plots
    draw, and the 1 s tok/s drawn faint behind them."""

    t: float
    tok_s: float
    accept_len: float | None
    in_flight: int
    tok_s_1s: float | None = None
    approx: bool = False  # tokens counted by chunks: the server sent no token counts
    window_s: float = 5.0  # the rolling window of tok_s and accept_len
    accept_source: str | None = None  # where accept_len came from: "request", "counters" or "log"


@dataclass
class ComparisonChanged(Message):
    """The live A/B figures per configuration changed (posted on the app's tick at most)."""

    comparison: Comparison

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ComparisonChanged)


@dataclass
class NoSpecBaselineFound(Message):
    """A saved no-speculation tok/s for this server and model: the tok/s plot's reference line."""

    tok_s: float
    source: str


@dataclass
class RequestFinished(Message):
    row: dict[str, Any]


@dataclass
class ConfigMarked(Message):
    """The server config changed at time t: plots draw a marker so an A/B reads on one timeline."""

    t: float
    label: str


@dataclass
class LoadStateChanged(Message):
    running: bool
    detail: str


@dataclass
class LoadSourceChanged(Message):
    """The live load's prompt source (coding, a file, ...): the A/B strip and the plots name it."""

    source: str


@dataclass
class OtherConfigRunning(Message):
    """A start or restart was refused: the server here runs another config file. The app asks
    whether to replace it (the controller's ``replace_other``) or keep it."""

    pid: int | None
    phase: Phase
    theirs: str   # the running server's config file
    ours: str     # the console's config file

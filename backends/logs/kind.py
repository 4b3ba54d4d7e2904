"""What kind of line a server log line is: the one place that decides "error", "draft", "decode".

The console's filter and highlighting, and anyone else who sorts log lines, read ``LogLine.kind``
instead of matching text of their own. The kind comes first from the event ``logparse.parse_line``
found on the line (a ``Fatal`` is fatal, a ``DraftRunner`` is draft, a ``DecodeBatch`` is decode);
only lines logparse does not know fall back to the text: a logging level (``ERROR``, ``WARNING``)
near the start, or a Python traceback. Pure: no Textual, no Rich.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from backends.logs.events import (AppStartupComplete, BlockSizeMismatch, DDTreeWorker, DecodeBatch,
    DraftCudaGraphDisabled, DraftRunner, DraftRunnerReady, Fatal, GraphCaptureBegin, GraphCaptureEnd,
    GraphCaptureProgress, GraphCaptureSizes, HttpRequest, KvCache, LogEvent, MaxTotalTokens, MemoryPoolEnd,
    PrefillBatch, ServerArgs, ServerReady, ServerStarted, ShardProgress, StartupTimings, UvicornRunning,
    WeightLoadBegin, WeightLoadEnd)
from backends.logs.llama_events import (LlamaDraftAcceptance, LlamaDraftBlock, LlamaDraftClamp, LlamaDraftParams,
    LlamaEvalTime, LlamaFitNotice, LlamaListening, LlamaModelLoaded, LlamaModelLoading, LlamaNotice, LlamaSlots,
    LlamaSpecImpl, LlamaThreads)
from backends.logs.parse import parse_line

# fatal: logparse says this line ends the server (OOM, port in use, scheduler died, ...)
# error / warning: a handled exception, an ERROR or WARNING level line, a traceback, an HTTP 5xx
# draft: the draft model's setup (window, compact cache, DDTree budget, block size)
# decode: Decode batch / Prefill batch statistics
# phase: a startup milestone (weights, KV cache, graph capture, server started, ready)
# http: an access log line; ddtune: ddtune's own notes; info: everything else
KINDS = ("fatal", "error", "warning", "draft", "decode", "phase", "http", "ddtune", "info")

_BY_EVENT: dict[type, str] = {
    DraftRunner: "draft", DraftRunnerReady: "draft", DDTreeWorker: "draft",
    DraftCudaGraphDisabled: "draft", BlockSizeMismatch: "draft",
    DecodeBatch: "decode", PrefillBatch: "decode",
    WeightLoadBegin: "phase", ShardProgress: "phase", WeightLoadEnd: "phase", KvCache: "phase",
    MemoryPoolEnd: "phase", GraphCaptureBegin: "phase", GraphCaptureSizes: "phase",
    GraphCaptureProgress: "phase", GraphCaptureEnd: "phase", MaxTotalTokens: "phase",
    StartupTimings: "phase", ServerStarted: "phase", AppStartupComplete: "phase",
    UvicornRunning: "phase", ServerReady: "phase",
    ServerArgs: "info",
    LlamaSpecImpl: "draft", LlamaDraftParams: "draft", LlamaDraftBlock: "draft", LlamaDraftClamp: "draft",
    LlamaDraftAcceptance: "decode", LlamaEvalTime: "decode",
    LlamaModelLoading: "phase", LlamaModelLoaded: "phase", LlamaSlots: "phase", LlamaThreads: "phase",
    LlamaListening: "phase",
    LlamaFitNotice: "info",  # an E line of llama.cpp's memory fitting: "this warning is normal"
}
# the fallback looks only this far into a line: levels and frames sit at the start, after at most
# a log collector's prefix (docker/kubectl/journald timestamps, a compose tag: up to ~64 characters)
_HEAD = 160 + 64
_LEVEL = re.compile(r"(?:^|[\s\]|])(CRITICAL|FATAL|ERROR|WARNING|WARN)(?=[:\s]|$)")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|\bFile \"[^\"]*\", line \d+")


@dataclass(frozen=True, slots=True)
class Tone:
    """A stretch of a drawn log line and the tone it is drawn in (one of ``LogLine.TONES``);
    ``end`` None: to the end of the line."""

    name: str
    start: int
    end: int | None = None


@dataclass(frozen=True, slots=True)
class LogLine:
    """One server log line as read, its kind (one of ``KINDS``) and the event parsed from it."""

    # every tone a line is drawn in: its kind's, then the spans that matter (``tones``)
    TONES: ClassVar[tuple[str, ...]] = KINDS + ("stamp", "ready", "draft-off", "window-off", "window-on", "accept")

    text: str
    kind: str
    event: LogEvent | None = None

    @classmethod
    def ddtune(cls, text: str) -> LogLine:
        """A line of ddtune's own (starting, restarting, lines skipped), not the server's."""
        return cls(text, "ddtune", None)

    def tones(self, shown: str) -> tuple[Tone, ...]:
        """The tones of ``shown`` (this line as drawn), in drawing order, later over earlier: the stamp
        muted, the message in its kind's tone (a ready line, or the draft runner's window on or off,
        in their own), then the draft window's and the acceptance's spans."""
        found = []
        start = 0
        if shown.startswith("[") and (close := shown.find("]", 1, 64)) > 0:
            found.append(Tone("stamp", 0, close + 1))
            start = close + 2 if shown[close + 1:close + 2] == " " else close + 1
        event = self.event
        if isinstance(event, ServerReady):
            found.append(Tone("ready", start))
        elif isinstance(event, DraftRunner):
            found.append(Tone("draft" if event.window_size is not None else "draft-off", start))
            at = shown.find("draft_window_size=")
            if at >= 0:
                end = shown.find(",", shown.find("compact_cache=", at))
                found.append(Tone("window-off" if event.window_size is None else "window-on", at,
                                  None if end < 0 else end))
        else:
            found.append(Tone(self.kind, start))
            if self.kind == "decode" and (at := shown.find("accept len: ")) >= 0:
                end = shown.find(",", at)
                found.append(Tone("accept", at, None if end < 0 else end))
        return tuple(found)


def classify(text: str, event: LogEvent | None) -> str:
    """The kind of ``text``, whose parsed event (``parse_line(text)``) is ``event``."""
    if event is not None:
        if isinstance(event, Fatal):
            # A bare exception line is fatal before the server is ready, but SGLang also logs
            # handled request errors that way: an error, not the end of the server.
            return "error" if event.generic else "fatal"
        if isinstance(event, HttpRequest):
            return "error" if event.status >= 500 else "http"
        if isinstance(event, LlamaNotice):  # llama.cpp's level letter: W warning, E error
            return "warning" if event.level == "W" else "error"
        kind = _BY_EVENT.get(type(event))
        if kind is not None:
            return kind
    head = text[:_HEAD]
    level = _LEVEL.search(head)
    if level is not None:
        return "warning" if level.group(1).startswith("WARN") else "error"
    if _TRACEBACK.search(head):
        return "error"
    return "info"


def read_lines(texts: Iterable[str]) -> list[LogLine]:
    """Each text parsed once and classified: what the console's log pane shows."""
    out = []
    for text in texts:
        event = parse_line(text)
        out.append(LogLine(text, classify(text, event), event))
    return out


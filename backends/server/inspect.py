"""``ddtune inspect``'s use case: a saved server log read once into one typed report.

Every line goes through the summary (phases, weights, KV cache, draft settings, decode stats, the
fatal line), the startup tracker on the log's own clock (seconds per phase), the deprecation notes
the server printed, and the console's acceptance-collapse rule on the lead rank's decode lines. The
command only prints the report (text, or its ``to_json``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from backends.core.errors import UsageError
from backends.core.phase import Phase
from backends.logs.alarms import AcceptanceWatch, Alarm
from backends.logs.deprecations import deprecation
from backends.logs.events import DecodeBatch
from backends.logs.summary import LogSummary, SummaryBuilder, read_log_lines
from backends.server.startup import StartupTracker


@dataclass(frozen=True)
class LogReport:
    """What a whole log says: its summary, the startup phases timed on its clock (``phases``: seconds
    each, in order; ``last_phase`` and its ``last_detail`` where it stopped), what it said is
    deprecated, and the collapse alarm when its decode lines raised it."""

    path: str
    summary: LogSummary
    phases: dict[str, float]
    last_phase: Phase
    last_detail: str
    deprecated: tuple[str, ...]
    alarm: Alarm | None

    def to_json(self) -> dict[str, Any]:
        doc = self.summary.to_json()
        doc["phases"] = dict(self.phases)  # seconds per startup phase, from the log's timestamps
        doc["last_phase"] = self.last_phase
        doc["alarms"] = [self.alarm.to_json()] if self.alarm else []
        doc["deprecated"] = list(self.deprecated)
        return doc


def inspect_log(path: str) -> LogReport:
    """Read the log at ``path`` (streamed, bounded memory) into its report. Raises UsageError naming
    LOGFILE when it is missing, a directory, not a regular file, or unreadable."""
    if not os.path.exists(path):
        raise UsageError(f"LOGFILE: no such file: {path}", hint="give the path of a saved SGLang or llama-server log")
    if os.path.isdir(path):
        raise UsageError(f"LOGFILE: {path} is a directory", hint="give the path of a log file inside it")
    builder = SummaryBuilder()
    tracker = StartupTracker()
    clock: float | None = None
    watch = AcceptanceWatch()  # the console's collapse rule, on the lead rank's decode lines (log time)
    deprecated: list[str] = []
    try:
        for line in read_log_lines(path, error=UsageError, name=f"LOGFILE {path}"):
            event = builder.add_line(line)
            note = deprecation(line) if event is None and ("deprecated" in line or "entrypoint" in line) else None
            if note is not None and note not in deprecated:
                deprecated.append(note)
            if isinstance(event, DecodeBatch) and event.is_lead and not event.idle and event.time_s is not None:
                watch.decode(event.time_s, event.accept_len)  # a plain server's lines have no accept len
            if event is None:
                continue
            t = event.time_s
            clock = t if t is not None else clock
            if clock is not None:
                tracker.feed(event, clock)
    except OSError as exc:
        raise UsageError(f"LOGFILE: cannot read {path}: {exc.strerror or exc}",
                         hint="check the path and its permissions") from None
    return LogReport(path, builder.summary(), tracker.durations(clock), tracker.phase, tracker.detail,
                     tuple(deprecated), watch.alarm)

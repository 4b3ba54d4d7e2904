"""What a ServerSession reports: frozen, past-tense facts, in the order they happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backends.logs.alarms import Alarm
from backends.logs.kind import LogLine
from backends.server.startup import Progress
from backends.record.state import ServerState
from backends.knobs.verify import KnobCheck


@dataclass(frozen=True)
class PhaseChanged:
    """The start moved (or a long phase is still running: repeated every few seconds)."""

    progress: Progress


@dataclass(frozen=True)
class NoteAdded:
    """A sentence for the operator: what ddtune did or decided (stopping pid N, re-attached, ...)."""

    text: str


@dataclass(frozen=True)
class LogBatch:
    """Server log lines read since the last batch, each parsed and classified once."""

    lines: tuple[LogLine, ...]
    skipped: int = 0       # lines of a burst dropped before this batch (the newest are kept)


@dataclass(frozen=True)
class DecodeStats:
    """The lead rank's ``Decode batch`` line: what the server itself measured."""

    t: float               # monotonic time the line was read
    gen_throughput: float | None
    accept_len: float | None
    running_req: int = 0   # the requests the line's verify calls ran for (its acceptance's weight)


@dataclass(frozen=True)
class FatalSeen:
    """A line that ends a server (OOM, scheduler died, ...), before or after ready."""

    kind: str
    message: str


@dataclass(frozen=True)
class PidChanged:
    """A new server process was launched for this state dir, by this session or another ddtune."""

    pid: int | None
    log_path: str | None
    by: str                # "ddtune" for this session, else who ("another ddtune (pid N)")


@dataclass(frozen=True)
class ConfigChanged:
    """The requested knobs changed: plots draw a marker so an A/B reads on one timeline."""

    knobs: dict[str, Any]
    label: str


@dataclass(frozen=True)
class Verified:
    """What the server reports for each requested knob, once it is ready (before ``Settled``)."""

    checks: tuple[KnobCheck, ...]

    @property
    def mismatches(self) -> tuple[KnobCheck, ...]:
        return tuple(c for c in self.checks if c.status == "mismatch")


@dataclass(frozen=True)
class Settled:
    """A start ended: ready (knobs verified, see ``state.checks``) or failed (``state.reason``)."""

    state: ServerState
    version: str | None


@dataclass(frozen=True)
class AlarmRaised:
    """A guard tripped (``alarm.kind``: ``acceptance_collapse``): loud until ``AlarmCleared``."""

    alarm: Alarm


@dataclass(frozen=True)
class AlarmCleared:
    kind: str


@dataclass(frozen=True)
class Stopped:
    summary: str


@dataclass(frozen=True)
class CommandRefused:
    """A command was refused before anything changed (bad knob, busy lock, foreign port owner)."""

    message: str
    hint: str | None = None


SessionEvent = (PhaseChanged | NoteAdded | LogBatch | DecodeStats | FatalSeen | PidChanged | ConfigChanged
                | Verified | Settled | Stopped | CommandRefused | AlarmRaised | AlarmCleared)

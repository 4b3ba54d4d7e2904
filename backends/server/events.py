"""What a ServerSession reports: frozen, past-tense facts, in the order they happened, and the
fan-out that hands them to readers (``EventHub``: callbacks and ``async for`` queues)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, assert_never

from backends.knobs.plan import knob_text
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

    @classmethod
    def between(cls, before: dict[str, Any], after: dict[str, Any]) -> ConfigChanged:
        """The change to ``after``, labelled ``window 2048 -> 1024, topk 4 -> 6`` for markers and notes."""
        parts = [f"{k} {knob_text(before.get(k))} -> {knob_text(v)}" for k, v in after.items() if before.get(k) != v]
        return cls(dict(after), ", ".join(parts) or "same knobs")


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
    other: ServerState | None = None  # refused because this server of another config file runs (OtherConfigRuns)


SessionEvent = (PhaseChanged | NoteAdded | LogBatch | DecodeStats | FatalSeen | PidChanged | ConfigChanged
                | Verified | Settled | Stopped | CommandRefused | AlarmRaised | AlarmCleared)


def narrated(on_progress: Callable[[Progress], None] | None,
             on_note: Callable[[str], None] | None) -> Callable[[SessionEvent], None]:
    """A session subscriber that tells a headless reader (a CLI command, a lane stop, selftest) the
    start's progress and the notes; the command's outcome (or refusal) comes back from the command."""
    def listen(event: SessionEvent) -> None:
        match event:
            case PhaseChanged(progress=progress):
                if on_progress is not None:
                    on_progress(progress)
            case NoteAdded(text=text):
                if on_note is not None:
                    on_note(text)
            case (LogBatch() | DecodeStats() | FatalSeen() | PidChanged() | ConfigChanged() | Verified() | Settled()
                  | Stopped() | CommandRefused() | AlarmRaised() | AlarmCleared()):
                pass
            case _:
                assert_never(event)
    return listen


QUEUE_MAX = 4096   # events a slow events() reader may fall behind by; past it the oldest go


class EventHub:
    """Every event to every reader, in order, on the emitter's event loop."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[SessionEvent], None]] = []
        self._queues: list[asyncio.Queue[SessionEvent]] = []

    def subscribe(self, callback: Callable[[SessionEvent], None]) -> None:
        """Call ``callback`` with every event, synchronously, on the session's event loop."""
        self._listeners.append(callback)

    def unsubscribe(self, callback: Callable[[SessionEvent], None]) -> None:
        self._listeners.remove(callback)

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Every event from now on, in order, until the reader stops iterating."""
        queue: asyncio.Queue[SessionEvent] = asyncio.Queue(QUEUE_MAX)
        self._queues.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.remove(queue)

    def _emit(self, event: SessionEvent) -> None:
        for callback in list(self._listeners):
            callback(event)
        for queue in self._queues:
            if queue.full():
                queue.get_nowait()  # a reader this far behind loses the oldest event, not the loop
            queue.put_nowait(event)

"""Where the session's server stands, for a reader that shows it (the console): ``StatusFeed``.

A ServerSession reports many kinds of facts (events.py). A reader that draws the server needs few: the
log lines and the decode statistics as they come, and for everything else one ``ServerStatus``: the
phase (the session's own, from its record and its start's progress: nobody above re-derives it), what
it is doing, why it failed, the knobs as verified (a knob change rides on its ``StatusChanged``).
``StatusFeed`` folds every event into that status, with ``match`` over the whole ``SessionEvent`` union
and ``assert_never`` in its last arm: mypy fails here when an event is added and not decided on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, assert_never

from backends.core.errors import DdtuneError
from backends.core.phase import Phase
from backends.knobs.plan import knob_text
from backends.knobs.verify import KnobCheck
from backends.record.state import ServerState
from backends.server.events import (
    AlarmCleared, AlarmRaised, CommandRefused, ConfigChanged, DecodeStats, FatalSeen, LogBatch, NoteAdded,
    PhaseChanged, PidChanged, SessionEvent, Settled, Stopped, Verified,
)
from backends.server.session import ServerSession
from backends.server.lane_gpu import lane_trees
from backends.server.startup import WORK_PHASES
from backends.server.telemetry import TelemetryStream

T = TypeVar("T")
_FRACTION = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class KnobStatus:
    """One requested knob against what the server says: ``verified`` True (matches), False
    (mismatch) or None (unknown: no check, or the server did not say)."""

    name: str
    requested: str
    effective: str | None
    verified: bool | None


@dataclass(frozen=True)
class ServerStatus:
    """The server as a reader shows it, at ``at`` (monotonic seconds)."""

    backend: str
    url: str
    attached: bool                 # the driver attaches to someone else's server: no start of its own to time
    engine: str                    # what ``version`` is a version of ("sglang", "llama.cpp")
    phase: Phase = Phase.IDLE
    detail: str = ""               # what the phase is doing ("" once ready or failed)
    pid: int | None = None
    version: str | None = None
    fatal: str | None = None       # why the start or the last command failed (one line)
    note: str | None = None        # the session's latest sentence, while not ready
    alarm: str | None = None       # a guard that tripped (acceptance collapse), while ready
    knobs: tuple[KnobStatus, ...] = ()
    eta_s: float | None = None     # seconds left of the start at the last report (None: no history)
    started_s: float | None = None  # seconds since the start began, at ``at`` (None: no start seen)
    ready_at: float | None = None  # wall clock: the server became ready
    at: float = 0.0

    @property
    def fraction(self) -> float | None:
        """How far the phase is (0..1) when its detail counts ("shard 3/8"), else None."""
        match = _FRACTION.search(self.detail)
        if self.phase in (Phase.READY, Phase.STOPPED) or not match or int(match.group(2)) == 0:
            return None
        return min(int(match.group(1)) / int(match.group(2)), 1.0)

    def elapsed_s(self, now: float) -> float | None:
        """Whole seconds since the start began, ticking on to ``now`` (monotonic) while it runs."""
        if self.started_s is None or self.phase == Phase.STOPPED:
            return None
        extra = 0.0 if self.phase.settled else max(now - self.at, 0.0)
        return float(int(self.started_s + extra))

    def uptime_s(self, now: float) -> float | None:
        """A ready server's age at ``now`` (wall clock), in whole minutes (0: under one)."""
        if self.phase != Phase.READY or not self.ready_at:
            return None
        return max(now - self.ready_at, 0.0) // 60 * 60


@dataclass(frozen=True)
class StatusChanged:
    """The status after one of the session's events; ``said``: a sentence for the operator's log (a
    note, a refusal, an alarm, a stop); ``came_to``: the session came to rest with it (a start ended
    READY or FAILED, or the server STOPPED); ``other_config``: a command was refused because this
    server of another config file runs (the reader may offer to replace it); ``knobs``: the requested
    knobs changed (a restart to others: what to mark on a timeline)."""

    status: ServerStatus
    said: str | None = None
    came_to: Phase | None = None
    other_config: ServerState | None = None
    knobs: ConfigChanged | None = None


FeedEvent = LogBatch | DecodeStats | StatusChanged


class StatusFeed:
    """``StatusFeed(session, callback)``: ``callback`` gets every ``FeedEvent`` (from ``feed.tell(callback)``
    on, when given later); ``feed.status`` is the status now. ``await feed.attempt(command)`` runs a
    session command whose refusal the feed reports."""

    def __init__(self, session: ServerSession, callback: Callable[[FeedEvent], None] = lambda event: None) -> None:
        self.session = session
        self._callback = callback
        self.note: str | None = None
        self.failure: str | None = None  # why the last command was refused before anything changed
        self.stopped: str | None = None  # what stopped the server, until the next start
        self.alarm: str | None = None    # the session's guard that tripped, until it clears
        self._at = 0.0                   # monotonic: the last report of the start
        session.subscribe(self._on_event)

    def tell(self, callback: Callable[[FeedEvent], None]) -> None:
        """From now on, hand every ``FeedEvent`` to ``callback`` (instead of the one given before)."""
        self._callback = callback

    def command_begins(self) -> None:
        """The reader starts a command: its earlier refusal and stop are history."""
        self.failure = self.stopped = None

    async def attempt(self, command: Awaitable[T]) -> T | None:
        """Await a session command; None when it was refused (the feed said why: ``fatal``, ``said``)."""
        try:
            return await command
        except DdtuneError:
            return None

    def offer(self, way_out: str) -> None:
        """The reader offers a way out of the last refusal (``u: replace it``): the status says it."""
        if self.failure:
            self.failure = f"{self.failure} ({way_out})"

    def telemetry(self, interval: float = 1.0) -> TelemetryStream:
        """Samples of the machine, this session's server tree and the lanes' servers, every ``interval`` s."""
        def server_ref() -> tuple[int, int | None] | None:
            state = self.session.state
            return (state.pid, state.pgid) if state and state.pid else None

        return TelemetryStream(server=server_ref, interval=interval,
                               lanes=lambda: lane_trees(note=lambda _: None))  # a corrupt record: down/up say so

    @property
    def running(self) -> bool:
        """A server of this session's runs now (or is starting): not after a stop or a failed start."""
        state = self.session.state
        return self.stopped is None and state is not None and state.phase not in (Phase.FAILED, Phase.STOPPED)

    # --- the session's events ---------------------------------------------------------------
    def _on_event(self, event: SessionEvent) -> None:
        said: str | None = None
        came_to: Phase | None = None
        other: ServerState | None = None
        knobs: ConfigChanged | None = None
        match event:
            case LogBatch() | DecodeStats():
                self._callback(event)
                return
            case ConfigChanged():
                knobs = event  # the knob rows show the new request
            case PhaseChanged() | FatalSeen() | Verified():
                pass  # the status reads the start's progress and the record from the session
            case NoteAdded(text=text):
                self.note = said = text
            case PidChanged(pid=pid, by=by):
                self.stopped = None
                said = f"pid {pid} launched by {by}" if by != "ddtune" else None
            case Settled(state=state):
                came_to = state.phase if state.phase.settled else None
            case Stopped(summary=summary):
                self.stopped = said = summary
                came_to = Phase.STOPPED
            case CommandRefused(message=message, hint=hint, other=other):
                said = message + (f" ({hint})" if hint else "")
                self.failure = message if other is not None else said  # the reader offers its own way out
            case AlarmRaised(alarm=alarm):
                self.alarm = alarm.message
                said = f"ALARM {alarm.kind}: {alarm.message}"
            case AlarmCleared():
                self.alarm = None
            case _:
                assert_never(event)
        self._at = time.monotonic()
        self._callback(StatusChanged(self.status, said, came_to, other, knobs))

    # --- the status -------------------------------------------------------------------------
    @property
    def status(self) -> ServerStatus:
        session = self.session
        state, progress = session.state, session.progress
        phase = state.phase if state is not None and state.phase.settled else \
            (progress.phase if progress else Phase.IDLE)
        if progress is not None and progress.phase in WORK_PHASES:
            phase = progress.phase  # a start is under way (ours, a sweep's, or another ddtune's)
        detail = progress.detail if progress else ""
        ready = state is not None and state.phase == Phase.READY
        if phase == Phase.READY and not ready:
            phase, detail = Phase.WARMUP, "ready; verifying the knobs"  # the session has not settled yet
        if self.stopped and state is None:
            phase, detail = Phase.STOPPED, self.stopped
        fatal = None
        if self.failure:
            phase, fatal = Phase.FAILED, self.failure
        failed = state is not None and state.phase == Phase.FAILED
        if phase == Phase.FAILED and not fatal and not failed:
            fatal = (session.tracker.error or "").split("\n")[0] or None
        if state is not None and failed:
            fatal = fatal or (state.reason or "").split("\n")[0]
        config, driver = session.config, session.backend
        return ServerStatus(
            backend=config.backend, url=config.base_url, attached=driver.ATTACHES, engine=driver.DIALECT.engine.lower(),
            phase=phase, detail="" if phase.settled else detail,
            pid=(state.pid if state else None) or (progress.pid if progress else None), version=session.version,
            fatal=fatal, note=None if phase == Phase.READY else self.note,
            alarm=self.alarm if phase == Phase.READY else None,
            knobs=knob_statuses(config.knobs, state.checks if state is not None and phase == Phase.READY else ()),
            eta_s=progress.eta_s if progress else None, started_s=progress.elapsed_s if progress else None,
            ready_at=state.ready_at if state is not None else None, at=self._at,
        )


_VERIFIED = {"verified": True, "mismatch": False, "default": True}  # default: nothing asked, nothing to miss


def knob_statuses(knobs: Mapping[str, Any], checks: Iterable[KnobCheck]) -> tuple[KnobStatus, ...]:
    """Requested versus what the server says, per knob, from the typed checks: verified, mismatch,
    or unknown (no check, or the server did not say)."""
    by_name = {check.name: check for check in checks}
    rows = []
    for name, value in knobs.items():
        requested = knob_text(value)
        check = by_name.get(name)
        if check is None or check.status == "unverified" or (check.status == "default" and check.effective is None):
            rows.append(KnobStatus(name, requested, None, None))
            continue
        shown = "None" if check.effective is None else str(check.effective)
        rows.append(KnobStatus(name, requested, shown, _VERIFIED[check.status]))
    return tuple(rows)

"""The one mover of a session's StartupTracker and the one place its phase is reported from.

Every change of the startup phase, whoever causes it (the lifecycle's steps, a log line, another
ddtune's restart seen by the watcher), is made here and reported as a ``Progress``: no callback runs
from the log reader through a second object and back. A log line's move is reported at once where a
reader shows every step (the console, ``every_line``); headless, where each report is a line on
stderr, a line that moves the start into its next phase is reported at once (each phase of a start
shows, however fast it passed) and one that only moves the detail (a shard, a graph size) when the
wait for readiness polls (at most ~10 a second). An unchanged phase is reported again every HEARTBEAT_S, so
a long wait still shows it is alive; while the old server stops or the port and GPU are awaited,
``heartbeat()`` ticks those reports (their elapsed times grow).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from backends.logs.events import LogEvent, ServerReady
from backends.core.phase import Phase
from backends.server.startup import Progress, StartupTracker

HEARTBEAT_S = 5.0   # repeat an unchanged phase this often
TICK_S = 0.5        # how often heartbeat() looks while stopping or waiting


class Phases:
    """``phases.stopping()``, ``.waiting(detail)``, ``.starting(detail)``, ``.log_event(event)``,
    ``.ready(pid)``, ``.failed(reason, pid)``; each reports to ``on_progress``."""

    def __init__(self, tracker: StartupTracker, on_progress: Callable[[Progress], None],
                 every_line: bool = True) -> None:
        self.tracker = tracker
        self.on_progress = on_progress
        self.every_line = every_line
        self.pid: int | None = None  # the server the log being read belongs to: a log line's report names it
        self._last: tuple[Phase, str] | None = None
        self._last_time = 0.0

    @property
    def judging(self) -> bool:
        """A start is under way: its fatal lines fail it (after ready or failed they are status's)."""
        return not self.tracker.phase.settled

    # --- moves ------------------------------------------------------------------------------
    def stopping(self, pid: int | None = None) -> None:
        """A new start begins by stopping the old server (ours, or another ddtune's restart)."""
        self.tracker.begin_stop(time.monotonic())
        self.report(pid, force=True)

    def waiting(self, detail: str, pid: int | None = None, force: bool = False) -> None:
        self.tracker.begin_wait(time.monotonic(), detail)
        self.report(pid, force=force)

    def starting(self, detail: str) -> None:
        """The new process exists (reported by the wait for readiness, which names its pid)."""
        self.tracker.begin_start(time.monotonic(), detail)

    def log_event(self, event: LogEvent) -> None:
        """A parsed line of the server's log: the tracker moves by it (reported now when ``every_line``
        or when it began another phase)."""
        before = self.tracker.phase
        if self.tracker.feed(event, time.monotonic()) and (self.every_line or self.tracker.phase != before):
            self.report(self.pid)

    def ready(self, pid: int | None) -> None:
        if self.tracker.phase != Phase.READY:
            self.tracker.feed(ServerReady(), time.monotonic())
        self.report(pid)

    def failed(self, reason: str, pid: int | None) -> None:
        self.tracker.fail(reason, time.monotonic())
        self.report(pid)

    # --- reports ----------------------------------------------------------------------------
    def report(self, pid: int | None = None, probing: bool = False, force: bool = False) -> None:
        """Report the phase now if it changed (or HEARTBEAT_S passed, or ``force``)."""
        now = time.monotonic()
        t = self.tracker
        phase, detail = t.phase, t.detail
        if phase == Phase.READY and probing:
            phase, detail = Phase.WARMUP, "log says ready; probing the new pid"
        if (phase, detail) == self._last and not force and now - self._last_time < HEARTBEAT_S:
            return
        self._last, self._last_time = (phase, detail), now
        self.on_progress(Progress(phase, detail, t.elapsed(now), t.phase_elapsed(now), t.eta_s(now), pid))

    async def heartbeat(self) -> None:
        """Until cancelled: keep a stop or a wait visibly ticking."""
        while True:
            await asyncio.sleep(TICK_S)
            if self.tracker.phase in (Phase.STOPPING, Phase.WAITING):
                self.report()

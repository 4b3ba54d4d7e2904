"""The console's controller: a thin reader of the ServerSession, plus telemetry and the coding load.

The session (backends.server.ServerSession) owns the server: lifecycle, the one log reader, verification,
and what other ddtune processes do to it. The controller turns the session's events into the
screen's messages (tui/messages.py) through the ``post`` callable it is given, and runs the
session's commands in Textual workers. It never touches a widget and never reads a file itself.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from backends.knobs import ServerConfig
from backends.core import Phase
from backends.server import (
    AlarmCleared, AlarmRaised, CommandRefused, ConfigChanged, DecodeStats, LogBatch, NoteAdded,
    PhaseChanged, PidChanged, ServerSession, SessionEvent, Settled, Stopped,
)
from tui import messages as m
from tui.adapters import knob_rows
from tui.live_load import LiveLoad, note_line
from tui.load_figures import LoadFigures
from tui.views import ServerView

if TYPE_CHECKING:
    from workloads.live import ConfigFigures, LoadProcess  # noqa: F401

_FRACTION = re.compile(r"(\d+)/(\d+)")


def progress_fraction(detail: str) -> float | None:
    match = _FRACTION.search(detail or "")
    if not match or int(match.group(2)) == 0:
        return None
    return min(int(match.group(1)) / int(match.group(2)), 1.0)


class ConsoleController(LiveLoad):
    """What the app drives: start or re-attach, apply knobs, load on/off, and leave or stop on quit."""

    def __init__(self, config: ServerConfig, simulated: bool, load_concurrency: int = 8,
                 load_max_tokens: int = 1024, autostart_load: bool = False, load_window_s: float = 5.0,
                 load_prompts: str = "coding") -> None:

        self.session = ServerSession(config)
        self.file_config = config  # what the config file says; a re-attached server may run other knobs
        self.simulated = simulated
        self.load_concurrency = load_concurrency
        self.load_max_tokens = load_max_tokens
        self.load_window_s = load_window_s  # the rolling window of the plotted rates
        self.load_prompts = load_prompts    # the load's prompt source (workloads/prompts): the picker changes it
        self.load: LoadProcess | None = None
        self.figures = LoadFigures(config.knobs, lambda message: self._post(message))
        self._load_paused = False
        self._load_said: tuple[bool, str] | None = None  # the load line as last said (said once each)
        self._load_wanted = autostart_load  # the user wants the load on: it comes back with its server
        self._load_held: str | None = None  # a sweep or search on this server pauses the load until it ends
        self._load_drained = asyncio.Event()
        self.session.before_stop(self._pause_load_and_wait)
        self.note: str | None = None
        self.failure: str | None = None  # why the last command was refused before anything changed
        self.stopped: str | None = None  # what stopped the server, until the next start
        self.alarm: str | None = None    # the session's guard that tripped, until it clears
        self._post: Callable[[Message], object] = lambda message: None
        self._run_worker: Callable[..., Any] | None = None
        self._replace: Callable[[], Any] | None = None  # the refused command again, replacing (after asking)
        self._last_view: ServerView | None = None
        self._progress_at = 0.0

    @property
    def config(self) -> ServerConfig:
        return self.session.config

    @property
    def server_running(self) -> bool:
        """Whether a server of this session's runs now (or is starting): not after a stop or a failed start."""
        state = self.session.state
        return self.stopped is None and state is not None and state.phase not in (Phase.FAILED, Phase.STOPPED)

    # --- wiring -----------------------------------------------------------------------------
    def attach(self, post: Callable[[Message], object], run_worker: Callable[..., Any]) -> None:
        """Start: ``post`` delivers messages to the screen, ``run_worker`` runs coroutines as workers."""
        self._post, self._run_worker = post, run_worker
        self.session.subscribe(self._on_event)
        self._publish()
        self.start()
        run_worker(self._telemetry(), group="telemetry", exit_on_error=False)

    def post(self, message: Message) -> None:
        self._post(message)

    def _command(self, what: str, command, replacing: Callable[[], Any] | None = None) -> None:
        """Run a session command; ``replacing()``: the same command allowed to stop a server of
        another config file, run only after the user said so (a refusal posts OtherConfigRunning)."""
        self.failure = self.stopped = None
        self.post(m.LogLinesRead((note_line(f"{what} the {self.config.backend} server on port {self.config.port}"),)))
        if self._run_worker is not None:
            self._run_worker(self._await(command, replacing), group="server", exclusive=True, exit_on_error=False)

    async def _await(self, command, replacing: Callable[[], Any] | None = None) -> None:
        from backends.core import DdtuneError
        from backends.server import OtherConfigRuns

        try:
            await command
        except OtherConfigRuns as exc:
            self._replace = replacing
            self.failure = f"{exc.message} (u: replace it, after asking)"
            self._publish()
            self.post(m.OtherConfigRunning(exc.state.pid, exc.state.phase, exc.theirs, self.config.source))
        except DdtuneError:
            pass  # the session reported it (CommandRefused)
        finally:
            self.session.watch()  # from now on, follow what other ddtune processes do

    def replace_other(self) -> None:
        """The user said yes: stop the other config's server and run the refused command."""
        replacing, self._replace = self._replace, None
        if replacing is not None:
            self._command("replacing the other config's server with", replacing())

    def tick(self) -> None:
        """The app's periodic tick: elapsed and uptime move; posts only when the panel (or the A/B
        strip) would change."""
        self._publish()
        self.figures.tick()

    def pin_baseline(self) -> ConfigFigures:
        """Pin the current configuration as the baseline the A/B strip compares with; its figures."""
        return self.figures.pin()

    # --- the session's events -> the screen's messages -------------------------------------
    def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, LogBatch):
            lines = event.lines
            if event.skipped:
                lines = (note_line(f"{event.skipped} log lines skipped (burst)"),) + lines
            self.post(m.LogLinesRead(lines))
            return
        if isinstance(event, DecodeStats):
            if self.load is not None:  # the load's windows take acceptance from it where nothing else has it
                self.load.decode(event.t, event.accept_len, event.running_req)
            if event.gen_throughput is not None:
                self.figures.plotted = True
                self.post(m.DecodeStatsRead(event.t, event.gen_throughput, event.accept_len))
            return
        if isinstance(event, PidChanged):
            self.stopped = None
        if isinstance(event, AlarmRaised):
            self.alarm = event.alarm.message
            self.post(m.LogLinesRead((note_line(f"ALARM {event.alarm.kind}: {event.alarm.message}"),)))
        elif isinstance(event, AlarmCleared):
            self.alarm = None
        if isinstance(event, NoteAdded):
            self.note = event.text
            self.post(m.LogLinesRead((note_line(event.text),)))
        elif isinstance(event, CommandRefused):
            self.failure = event.message + (f" ({event.hint})" if event.hint else "")
            self.post(m.LogLinesRead((note_line(self.failure),)))
        elif isinstance(event, ConfigChanged):
            self.figures.config_changed(event.knobs, event.label)
        elif isinstance(event, PidChanged) and event.by != "ddtune":
            self.post(m.LogLinesRead((note_line(f"pid {event.pid} launched by {event.by}"),)))
        elif isinstance(event, Stopped):
            self.stopped = event.summary
            self.post(m.LogLinesRead((note_line(event.summary),)))
            self._pause_load(f"{event.summary}; it resumes once a server is back and verified (u starts one)",
                             "server stopped")
        elif isinstance(event, Settled):
            if event.state.phase == Phase.READY and self._load_held is None:
                self._resume_load()
            elif self._load_held is None:  # the new server failed: nothing to resume against yet
                self._pause_load("the server failed to start; it resumes once a start succeeds (u retries)",
                                 "server failed")
        elif isinstance(event, PhaseChanged) and event.progress.phase == Phase.STOPPING:
            self._pause_load()
        self._progress_at = time.monotonic()
        self._publish()

    def view(self) -> ServerView:
        session = self.session
        state, progress = session.state, session.progress
        settled = state is not None and state.phase in (Phase.READY, Phase.FAILED)
        phase = state.phase if state and settled else (progress.phase if progress else Phase.IDLE)
        if progress is not None and progress.phase not in (Phase.IDLE, Phase.READY, Phase.FAILED):
            phase = progress.phase  # a start is under way (ours, a sweep's, or another ddtune's)
        detail = progress.detail if progress else ""
        if phase == Phase.READY and not (state and state.phase == Phase.READY):
            phase, detail = Phase.WARMUP, "ready; verifying the knobs"  # the session has not settled yet
        if self.stopped and state is None:
            phase, detail = Phase.STOPPED, self.stopped
        fatal = None
        if self.failure:
            phase, fatal = Phase.FAILED, self.failure
        if phase == Phase.FAILED and not fatal and not (state and state.phase == Phase.FAILED):
            fatal = (session.tracker.error or "").split("\n")[0] or None
        if state and state.phase == Phase.FAILED:
            fatal = fatal or (state.reason or "").split("\n")[0]
        uptime = time.time() - state.ready_at if state and state.ready_at and phase == Phase.READY else None
        if uptime is not None:
            uptime = max(uptime, 0.0) // 60 * 60  # whole minutes (0: under one): the panel redraws once a minute
        pid = (state.pid if state else None) or (progress.pid if progress else None)
        return ServerView(
            backend=self.config.backend, simulated=self.simulated, attached=session.backend.ATTACHES,
            pid=pid, url=self.config.base_url,
            version=session.version, engine=session.backend.DIALECT.engine.lower(), uptime_s=uptime, phase=phase,
            detail="" if phase in (Phase.READY, Phase.FAILED) else detail,
            progress=None if phase in (Phase.READY, Phase.STOPPED) else progress_fraction(detail),
            elapsed_s=self._elapsed(phase), eta_s=progress.eta_s if progress else None,
            knobs=knob_rows(self.config.knobs, state.checks if state and phase == Phase.READY else ()), fatal=fatal,
            note=None if phase == Phase.READY else self.note, alarm=self.alarm if phase == Phase.READY else None,
        )

    def _elapsed(self, phase: Phase) -> float | None:
        """Seconds since the start began, ticking between the session's reports (whole seconds)."""
        progress = self.session.progress
        if progress is None:
            return None
        if phase == Phase.STOPPED:
            return None
        extra = 0.0 if phase in (Phase.READY, Phase.FAILED) else time.monotonic() - self._progress_at
        return float(int(progress.elapsed_s + extra))

    def _publish(self) -> None:
        view = self.view()
        if view != self._last_view:  # most ticks change nothing visible: send nothing then
            self._last_view = view
            self.post(m.ServerChanged(view))

    # --- commands ---------------------------------------------------------------------------
    def restart_with(self, knobs: dict[str, Any]) -> None:
        """Apply new knob values: the session validates them against the server before stopping it."""
        self._command("restarting", self.session.restart(knobs=knobs),
                      lambda: self.session.restart(knobs=knobs, replace=True))

    def start(self) -> None:
        """Start, re-attach, or retry after a failed start (keeps a tuned server's knobs)."""
        self._command("starting or re-attaching", self.session.up(keep_running_knobs=True),
                      lambda: self.session.up(keep_running_knobs=True, replace=True))

    def stop(self) -> None:
        if not self.session.backend.CAN_STOP:
            self.post(m.LogLinesRead((note_line("this server is not ddtune's to stop (an endpoint)"),)))
            return
        self._command("stopping", self._stop())

    async def _stop(self) -> None:
        """Pause the load first (its requests cancelled, not failed by a dying server), then stop."""
        self._pause_load("the server is stopping (x); it resumes once a server is back and verified (u starts one)",
                         "server stopped")
        await self._drained()
        await self.session.stop()

    def apply_config_file(self) -> bool:
        """Restart with the config file's knobs; False (nothing done) when the server already runs them."""
        if self.file_config.config_hash() == self.config.config_hash():
            return False
        self._command("applying the config file", self.session.restart(config=self.file_config),
                      lambda: self.session.restart(config=self.file_config, replace=True))
        return True

    # --- telemetry --------------------------------------------------------------------------
    async def _telemetry(self) -> None:
        from backends.server import TelemetryStream, lane_trees
        from tui.adapters import SteadyFigures, gpu_view

        def server_ref():
            state = self.session.state
            return (state.pid, state.pgid) if state and state.pid else None

        stream = TelemetryStream(server=server_ref, interval=1.0,
                                 lanes=lambda: lane_trees(note=lambda _: None))  # a corrupt record: down/up say so
        steady, shown = SteadyFigures(), None
        try:
            async for sample in stream:
                view = gpu_view(sample, stream.history, steady)
                if view != shown:  # an idle machine's sample often shows nothing new: send nothing then
                    shown = view
                    self.post(m.GpuSampled(view))
        finally:
            stream.close()

    # --- leaving ----------------------------------------------------------------------------
    async def detach(self, stop_server: bool) -> None:
        self._load_wanted = False
        if self.load is not None:
            await self.load.stop("stopped")
        try:
            if stop_server:
                await self.session.stop()
        finally:
            await self.session.close()


"""The console's controller: a thin reader of the ServerSession, plus telemetry and the coding load.

The session (backends.server.ServerSession) owns the server: lifecycle, the one log reader, verification,
and what other ddtune processes do to it. The controller reads it through a StatusFeed (the session's
events as a reader that draws the server needs them: log lines, decode stats, knob changes and one typed
status, its phase the session's own), turns those into the screen's messages (tui/messages.py) through
the ``post`` callable it is given, and runs the session's commands in Textual workers. It never touches
a widget, never reads a file and never works out the phase itself.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, assert_never

from textual.message import Message

from backends.core import Phase
from backends.knobs import ServerConfig
from backends.server import DecodeStats, LogBatch, ServerSession, StatusChanged, StatusFeed
from tui import messages as m
from tui.live_load import LiveLoad, note_line
from tui.views import KnobRow, ServerView
from workloads.live import ConfigFigures, ConsoleLoad


class ConsoleController(LiveLoad):
    """What the app drives: start or re-attach, apply knobs, load on/off, and leave or stop on quit."""

    def __init__(self, config: ServerConfig, simulated: bool, load_concurrency: int = 8,
                 load_max_tokens: int = 1024, autostart_load: bool = False, load_window_s: float = 5.0,
                 load_prompts: str = "coding") -> None:

        self.session = ServerSession(config)
        self.file_config = config  # what the config file says; a re-attached server may run other knobs
        self.simulated = simulated
        self.stopped: str | None = None  # what stopped the server, until the next start (the feed's)
        self._post: Callable[[Message], object] = lambda message: None
        self._run_worker: Callable[..., Any] | None = None
        # the coding load (or any prompt source): its worker, its pauses, the A/B and the baseline line
        self.live = ConsoleLoad(self.session, self.show_load, self._spawn, self._server_ready,
                                concurrency=load_concurrency, max_tokens=load_max_tokens, window_s=load_window_s,
                                prompts=load_prompts, wanted=autostart_load)
        self.session.before_stop(self.live.pause_and_wait)
        self.feed = StatusFeed(self.session)  # the session's events as the console shows them (told from attach)
        self._replacing: Callable[[], Any] | None = None  # the running command again, replacing (after asking)
        self._replace: Callable[[], Any] | None = None  # the refused command again, replacing (after asking)
        self._last_view: ServerView | None = None

    @property
    def config(self) -> ServerConfig:
        return self.session.config

    @property
    def server_running(self) -> bool:
        """Whether a server of this session's runs now (or is starting): not after a stop or a failed start."""
        return self.feed.running

    # --- wiring -----------------------------------------------------------------------------
    def attach(self, post: Callable[[Message], object], run_worker: Callable[..., Any]) -> None:
        """Start: ``post`` delivers messages to the screen, ``run_worker`` runs coroutines as workers."""
        self._post, self._run_worker = post, run_worker
        self.feed.tell(self._on_event)
        self._publish()
        self.start()
        run_worker(self._telemetry(), group="telemetry", exit_on_error=False)

    def post(self, message: Message) -> None:
        self._post(message)

    def _spawn(self, work: Coroutine[Any, Any, object], group: str) -> None:
        """Run the load's coroutines as workers: a new ``load`` (or ``baseline``) replaces the one before."""
        if self._run_worker is not None:
            self._run_worker(work, group=group, exclusive=group in ("load", "baseline"), exit_on_error=False)
        else:
            work.close()

    def _server_ready(self) -> bool:
        state = self.session.state
        return state is not None and state.phase == Phase.READY and not self.stopped

    def _command(self, what: str, command: Awaitable[Any], replacing: Callable[[], Any] | None = None) -> None:
        """Run a session command; ``replacing()``: the same command allowed to stop a server of
        another config file, run only after the user said so (a refusal posts OtherConfigRunning)."""
        self.feed.command_begins()
        self.stopped = None
        self._replacing = replacing
        self.post(m.LogLinesRead((note_line(f"{what} the {self.config.backend} server on port {self.config.port}"),)))
        if self._run_worker is not None:
            self._run_worker(self._await(command), group="server", exclusive=True, exit_on_error=False)

    async def _await(self, command: Awaitable[Any]) -> None:
        try:
            await self.feed.attempt(command)  # a refusal arrives as the feed's StatusChanged
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
        self.live.tick()

    def pin_baseline(self) -> ConfigFigures:
        """Pin the current configuration as the baseline the A/B strip compares with; its figures."""
        return self.live.pin()

    # --- the session's events -> the screen's messages -------------------------------------
    def _on_event(self, event: LogBatch | DecodeStats | StatusChanged) -> None:  # the feed's FeedEvent
        match event:
            case LogBatch(lines=lines, skipped=skipped):
                if skipped:
                    lines = (note_line(f"{skipped} log lines skipped (burst)"),) + lines
                self.post(m.LogLinesRead(lines))
                return
            case DecodeStats(t=t, gen_throughput=rate, accept_len=accept, running_req=running):
                self.live.decode(t, accept, running, plotted=rate is not None)
                if rate is not None:
                    self.post(m.DecodeStatsRead(t, rate, accept))
                return
            case StatusChanged():
                self._status_changed(event)
            case _:
                assert_never(event)
        self._publish()

    def _status_changed(self, event: StatusChanged) -> None:
        status = event.status
        if event.knobs is not None and self.live.config_changed(event.knobs.knobs, event.knobs.label):
            self.post(m.ConfigMarked(time.monotonic(), event.knobs.label))  # both plots mark it
        self.stopped = self.feed.stopped
        if event.said:
            self.post(m.LogLinesRead((note_line(event.said),)))
        if event.came_to == Phase.STOPPED:
            self.live.server_stopped(event.said or "the server stopped")
        elif event.came_to == Phase.READY:
            self.live.server_verified()
        elif event.came_to == Phase.FAILED:
            self.live.server_failed()
        elif status.phase == Phase.STOPPING:  # a restart (ours, a sweep's, another ddtune's) stops the server
            self.live.pause()
        other = event.other_config
        if other is not None:
            self._replace = self._replacing
            self.feed.offer("u: replace it, after asking")
            self._publish()
            self.post(m.OtherConfigRunning(other.pid, other.phase, other.config_source or "another config",
                                           self.config.source))

    def view(self) -> ServerView:
        """The server panel's view of the feed's status, its clocks read now."""
        s = self.feed.status
        return ServerView(
            backend=s.backend, simulated=self.simulated, attached=s.attached, pid=s.pid, url=s.url,
            version=s.version, engine=s.engine, uptime_s=s.uptime_s(time.time()), phase=s.phase, detail=s.detail,
            progress=s.fraction, elapsed_s=s.elapsed_s(time.monotonic()), eta_s=s.eta_s,
            knobs=tuple(KnobRow(k.name, k.requested, k.effective, k.verified) for k in s.knobs), fatal=s.fatal,
            note=s.note, alarm=s.alarm,
        )

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
        self.live.pause("the server is stopping (x); it resumes once a server is back and verified (u starts one)",
                        "server stopped")
        await self.live.drained()
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
        from tui.adapters import SteadyFigures, gpu_view

        stream = self.feed.telemetry(interval=1.0)
        steady, shown = SteadyFigures(), None
        try:
            async for sample in stream:
                view = gpu_view(sample, stream.history.util_gpu, steady)
                if view != shown:  # an idle machine's sample often shows nothing new: send nothing then
                    shown = view
                    self.post(m.GpuSampled(view))
        finally:
            stream.close()

    # --- leaving ----------------------------------------------------------------------------
    async def detach(self, stop_server: bool) -> None:
        await self.live.close()
        try:
            if stop_server:
                await self.session.stop()
        finally:
            await self.session.close()


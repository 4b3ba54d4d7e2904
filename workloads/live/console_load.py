"""The console's live load as one use case: ``ConsoleLoad``, which owns the load worker
(workloads/live/proc.py), the A/B of one configuration after another (workloads/live/ab.py) and the
saved no-speculation baseline (workloads/live/baseline.py), on the console's ServerSession.

The console tells it what happens to the server (a restart's stop, a stop, a verified server, a failed
start, a sweep or search holding the server, a change of knobs, a decode line) and what the user asks
(``l``, a prompt source, ``b``); it hands the console what to draw as typed updates (``LoadUpdate``):
a point worth plotting (``StatsUpdated``), a finished request (``RequestDone``), the load line
(``LoadState``), the baseline line (``NoSpecBaseline``) and the A/B (``Comparison``, on ``tick``,
only when it changed). A server restart pauses the load: requests in flight are cancelled and shown
as "cancelled", never scored, and this configuration's run ends ``interrupted (why)``; it resumes
once the new server is verified. Only ``l`` (or leaving) stops it.

It runs no task of its own: the console runs its coroutines (``spawn``, in its worker groups ``load``,
``load-stop`` and ``baseline``), so leaving the console stops them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, assert_never

from backends.core import Phase
from backends.knobs import KnobValue
from backends.server import ServerSession
from workloads.live.ab import Comparison, ConfigFigures, LiveAB
from workloads.live.baseline import NoSpecBaseline, find_no_spec_baseline
from workloads.live.events import (LoadPaused, LoadResumed, LoadStarted, LoadStopped, RequestDone,
                                   StatsUpdated)
from workloads.live.proc import LoadProcess

RESTART = "the server is restarting; it resumes once the new one is verified"
FAILED = "the server failed to start; it resumes once a start succeeds (u retries)"


@dataclass(frozen=True)
class LoadState:
    """The load line (the requests table's subtitle) and its prompt source. ``detail`` None: only the
    source changed (a new one picked while the load is off), the line stays as it was."""

    running: bool
    detail: str | None
    source: str


LoadUpdate = StatsUpdated | RequestDone | LoadState | NoSpecBaseline | Comparison
Spawn = Callable[[Coroutine[Any, Any, object], str], object]


class ConsoleLoad:
    """One per console. ``spawn(coroutine, group)`` runs a coroutine in the console's worker group
    (``load`` and ``baseline`` are exclusive: a new one replaces the one before); ``server_ready()``: a verified server
    runs and nothing stopped it (how an ended load says it comes back)."""

    def __init__(self, session: ServerSession, on_update: Callable[[LoadUpdate], object], spawn: Spawn,
                 server_ready: Callable[[], bool], *, concurrency: int = 8, max_tokens: int = 1024,
                 window_s: float = 5.0, prompts: str = "coding", wanted: bool = False) -> None:
        self.session = session
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.window_s = window_s   # the rolling window of the plotted rates
        self.prompts = prompts     # the prompt source (workloads/prompts): the picker changes it
        self.ab = LiveAB(session.config.knobs)
        self.proc: LoadProcess | None = None
        self.plotted = False       # a point is on the plots (the load's or the decode lines'): a change is marked
        self._update, self._spawn, self._server_ready = on_update, spawn, server_ready
        self._wanted = wanted      # the user wants the load on: it comes back with its server
        self._paused = False
        self._held: str | None = None  # a sweep or search on this server keeps the load paused until it ends
        self._drained = asyncio.Event()
        self._said: tuple[bool, str] | None = None  # the load line as last said (said once each)
        self._shown = -1           # the A/B version last handed over

    @property
    def running(self) -> bool:
        return self.proc is not None

    # --- what the user asks ----------------------------------------------------------------
    def toggle(self) -> bool:
        """The user's ``l``: only this (or leaving) stops the load; a server that stops pauses it."""
        if self.proc is not None:
            self._wanted = False
            self._spawn(self.proc.stop("stopped"), "load-stop")
            return False
        self._wanted = True
        self._spawn(self.run(), "load")
        return True

    def choose(self, source: str) -> bool:
        """The prompt source from now on; a running load restarts on it (its A/B starts afresh: figures
        on two sources do not compare). Whether a load was restarted."""
        if source == self.prompts:
            return False
        self.prompts = source
        self.ab, self._shown = LiveAB(self.session.config.knobs), -1
        self._update(LoadState(self.proc is not None, None, source))
        self.tick()
        if self.proc is None:
            return False
        self._spawn(self.run(), "load")
        return True

    def pin(self) -> ConfigFigures:
        """Pin the current configuration as the A/B's baseline; the strip shows it at once."""
        figures = self.ab.pin()
        self.tick()
        return figures

    def tick(self) -> None:
        """The console's tick: the A/B, when it changed since the last one."""
        if self.ab.version != self._shown:
            self._shown = self.ab.version
            self._update(self.ab.comparison())

    # --- what happens to the server ----------------------------------------------------------
    def config_changed(self, knobs: Mapping[str, KnobValue], label: str) -> bool:
        """A restart to other knobs (``label``: the change): a new configuration in the A/B. Whether the
        plots mark it: not a change before anything was plotted or measured (a re-attached server tuned
        before this console), which only names what runs."""
        return self.ab.mark(knobs, label) or self.plotted

    def decode(self, t: float, accept_len: float | None, running_req: int, plotted: bool) -> None:
        """A server's decode line: the load's windows take acceptance from it where nothing else has it;
        ``plotted``: the console drew its throughput."""
        if self.proc is not None:
            self.proc.decode(t, accept_len, running_req)
        self.plotted = self.plotted or plotted

    def pause(self, why: str = RESTART, share: str = "restart") -> None:
        """Pause the load (its requests in flight cancelled, this configuration's run closed as
        ``interrupted (share)``) and say why; a later pause only says its newer why."""
        if self.proc is None:
            return
        if not self._paused:
            self._paused = True
            self._drained = asyncio.Event()
            self.proc.pause(share)
        self._say(True, f"paused: {why}")

    def server_stopped(self, said: str) -> None:
        """The server stopped (``said``: how): the load pauses until a server is back and verified."""
        self.pause(f"{said}; it resumes once a server is back and verified (u starts one)", "server stopped")

    def server_verified(self) -> None:
        """A verified server: the load resumes, unless a sweep or search holds it."""
        if self._held is None:
            self._resume()

    def server_failed(self) -> None:
        """The new server failed: nothing to resume against yet."""
        if self._held is None:
            self.pause(FAILED, "server failed")

    async def drained(self, limit_s: float = 15.0) -> None:
        """Until the paused load's requests in flight are cancelled (at most ``limit_s``)."""
        if self.proc is None or not self._paused:
            return
        try:
            await asyncio.wait_for(self._drained.wait(), limit_s)
        except TimeoutError:
            pass

    async def pause_and_wait(self) -> None:
        """Before a restart stops the server: pause and wait until the requests in flight are cancelled,
        so none of them is scored as an error by the dying server."""
        if self.proc is None:
            return
        self.pause()
        await self._drained.wait()

    async def hold(self, what: str) -> None:
        """A sweep or search (``what``) needs this server to itself: pause the load and keep it paused
        across the run's restarts until ``release``; returns once the requests in flight are cancelled
        (or after 15 s, whatever the load process says)."""
        if self.proc is None:
            return
        self._held = what
        self.pause(f"{what} running; it resumes once the {what} is done", what)
        try:
            await self.drained()
        except asyncio.CancelledError:  # left before it began: nothing holds the load any more
            self.release()
            raise

    def release(self) -> None:
        """The sweep or search ended: the load resumes on a ready server; during a start the next verified
        server resumes it; on a failed server it stays paused."""
        if self._held is None:
            return
        self._held = None
        state = self.session.state
        if state is not None and state.phase == Phase.READY:
            self._resume()
        elif state is not None and state.phase == Phase.FAILED:
            self.pause(FAILED, "server failed")

    def _resume(self) -> None:
        """A paused load resumes; one that ended with its server starts again (when wanted)."""
        if self.proc is not None and self._paused:
            self._paused = False
            self.proc.resume()
            self._say(True, f"{self.concurrency} streams of {self.prompts}")
        elif self.proc is None and self._wanted:
            self._spawn(self.run(), "load")

    def _say(self, running: bool, detail: str, source: str | None = None) -> None:
        if self._said != (running, detail):
            self._said = (running, detail)
            self._update(LoadState(running, detail, source or self.prompts))

    # --- the load ---------------------------------------------------------------------------
    async def run(self) -> None:
        """One load worker, from its start to its end (the console's ``load`` worker group)."""
        proc = LoadProcess(window_s=self.window_s)
        self.proc, self._paused = proc, False
        try:
            await proc.start(self.session.config.base_url, self.session.api_key(), self.concurrency,
                             self.max_tokens, record=True, prompts=self.prompts)
            async for event in proc.events():
                if (plot := self.ab.observe(event)) is not None:
                    self.plotted = True
                    self._update(StatsUpdated(plot))
                match event:
                    case RequestDone():
                        if event.ok:
                            self.session.observe_request(event.accept_len)
                        self._update(event)  # a pause's cut-off request: "cancelled"
                    case LoadPaused():
                        self._drained.set()
                    case LoadStarted(concurrency=concurrency, prompts=prompts):
                        self._say(True, f"{concurrency} streams of {prompts}", prompts)
                        self._spawn(self._no_spec_baseline(concurrency), "baseline")
                    case LoadStopped(reason=reason, error=error):
                        if self.proc is proc:  # not a load replaced by another source
                            self._say(False, self._end(error or reason))
                    case StatsUpdated() | LoadResumed():
                        pass  # the A/B's (above)
                    case _:
                        assert_never(event)
        finally:
            if self.proc is proc:  # a load restarted on another source is already the next one
                self.proc = None
            await proc.stop("stopped")

    def _end(self, why: str) -> str:
        """Why the load ended, and how it comes back when the user did not stop it."""
        if not self._wanted:
            return why
        if self._server_ready():
            return f"{why}; l starts it again"
        return f"{why}; it starts again once a server is back and verified"

    async def _no_spec_baseline(self, concurrency: int) -> None:
        """The tok/s plot's reference line: a saved no-speculation tok/s of this model (a thread reads runs/)."""
        info = self.session.server_info or {}
        config = self.session.config
        models = {str(v) for v in (config.model, info.get("model_path"), info.get("served_model_name")) if v}
        found = await asyncio.to_thread(find_no_spec_baseline, models, concurrency)
        if found is not None:
            self._update(found)

    async def close(self) -> None:
        """Leaving: the load stops (its run recorded)."""
        self._wanted = False
        if self.proc is not None:
            await self.proc.stop("stopped")

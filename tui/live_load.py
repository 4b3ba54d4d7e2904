"""The console's live load, as the controller runs it: on and off, its prompt source, paused for a
restart, a stop, a sweep or a search (saying why, in the load line and the log pane) and back once
its server is verified.

The load runs in its own process (workloads/live/proc.py): this process only renders. A server
restart (ours, a sweep's or another ddtune's) pauses it: requests in flight are cancelled and shown
as "cancelled" (grey; Enter says why), never scored; it resumes once the new server is verified.
A mixin of ``ConsoleController`` (tui/controller.py), which owns the session and the wiring.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, assert_never

from textual.message import Message

from backends.knobs import ServerConfig
from backends.logs import LogLine, note
from backends.server import ServerSession
from tui import messages as m
from tui.load_figures import LoadFigures

if TYPE_CHECKING:
    from workloads.live import LoadProcess


def note_line(text: str) -> LogLine:
    return note(f"--- ddtune: {text}")


class LiveLoad:
    session: ServerSession
    figures: LoadFigures
    load: LoadProcess | None
    load_concurrency: int
    load_max_tokens: int
    load_window_s: float
    load_prompts: str
    stopped: str | None
    _load_paused: bool
    _load_said: tuple[bool, str] | None
    _load_wanted: bool
    _load_held: str | None
    _load_drained: asyncio.Event
    _run_worker: Callable[..., Any] | None

    @property
    def config(self) -> ServerConfig:
        raise NotImplementedError

    def post(self, message: Message) -> None:
        raise NotImplementedError

    # The load runs in its own process (workloads/live/proc.py): this process only renders. A server
    # restart (ours, a sweep's or another ddtune's) pauses it: requests in flight are cancelled and
    # shown as "cancelled" (grey; Enter says why), never scored; it resumes once the new server is verified.
    @property
    def load_running(self) -> bool:
        return self.load is not None

    def toggle_load(self) -> bool:
        """The user's ``l``: only this (or leaving) stops the load; a server that stops pauses it."""
        if self.load is not None:
            self._load_wanted = False
            if self._run_worker is not None:
                self._run_worker(self.load.stop("stopped"), group="load-stop", exit_on_error=False)
            return False
        self._load_wanted = True
        self._start_load()
        return True

    def choose_prompts(self, source: str) -> bool:
        """The load's prompt source from now on; a running load restarts on it (its A/B starts
        afresh: figures on two sources do not compare). Whether a load was restarted."""
        if source == self.load_prompts:
            return False
        self.load_prompts = source
        self.figures.new_source(self.config.knobs, source)
        if self.load is None or self._run_worker is None:
            return False
        self._start_load()
        return True

    def _start_load(self) -> None:
        if self._run_worker is not None:
            self._run_worker(self._run_load(), group="load", exclusive=True, exit_on_error=False)

    def _say_load(self, running: bool, detail: str) -> None:
        """The load line (the requests table's subtitle) and, for a change, a line in the log pane."""
        if self._load_said == (running, detail):
            return
        self._load_said = (running, detail)
        self.post(m.LoadStateChanged(running, detail))
        self.post(m.LogLinesRead((note_line(f"load {'on' if running else 'off'}: {detail}"),)))

    def _pause_load(self, why: str = "the server is restarting; it resumes once the new one is verified",
                    share: str = "restart") -> None:
        """Pause the load (its requests in flight cancelled, this configuration's run closed as
        ``interrupted (share)``) and say why; a later pause only says its newer why."""
        if self.load is None:
            return
        if not self._load_paused:
            self._load_paused = True
            self._load_drained = asyncio.Event()
            self.load.pause(share)
        self._say_load(True, f"paused: {why}")

    async def _drained(self, limit_s: float = 15.0) -> None:
        """Until the paused load's requests in flight are cancelled (at most ``limit_s``)."""
        if self.load is None or not self._load_paused:
            return
        try:
            await asyncio.wait_for(self._load_drained.wait(), limit_s)
        except TimeoutError:
            pass

    async def hold_load(self, what: str) -> None:
        """A sweep or search (``what``) needs this server to itself: pause the load, as Apply does,
        and keep it paused across the run's restarts until ``release_load``; returns once the
        requests in flight are cancelled (or after 15 s, whatever the load process says)."""
        if self.load is None:
            return
        self._load_held = what
        self._pause_load(f"{what} running; it resumes once the {what} is done", what)
        try:
            await self._drained()
        except asyncio.CancelledError:  # left before it began: nothing holds the load any more
            self.release_load()
            raise

    def release_load(self) -> None:
        """The sweep or search ended (done, failed or left): the load resumes on a ready server, as after
        Apply; during a start the next verified server resumes it; on a failed server it stops."""
        if self._load_held is None:
            return
        self._load_held = None
        state = self.session.state
        if state is not None and state.phase == "ready":
            self._resume_load()
        elif state is not None and state.phase == "failed":
            self._pause_load("the server failed to start; it resumes once a start succeeds (u retries)",
                             "server failed")

    async def _pause_load_and_wait(self) -> None:
        """Before our own restart stops the server: pause the load and wait until its requests in
        flight are cancelled, so none of them is scored as an error by the dying server."""
        if self.load is None:
            return
        self._pause_load()
        await self._load_drained.wait()

    def _resume_load(self) -> None:
        """The server is back and verified: a paused load resumes, one that ended with it starts again."""
        if self.load is not None and self._load_paused:
            self._load_paused = False
            self.load.resume()
            self._say_load(True, f"{self.load_concurrency} streams of {self.load_prompts}")
        elif self.load is None and self._load_wanted:
            self._start_load()

    async def _run_load(self) -> None:
        from workloads.live import LoadPaused, LoadProcess, LoadResumed, LoadStarted, LoadStopped, RequestDone, \
            StatsUpdated

        proc = LoadProcess(window_s=self.load_window_s)
        self.load, self._load_paused = proc, False
        try:
            await proc.start(self.config.base_url, self.session.api_key(), self.load_concurrency,
                             self.load_max_tokens, record=True, prompts=self.load_prompts)
            async for event in proc.events():
                self.figures.on_load_event(event)
                match event:
                    case RequestDone():
                        if event.ok:
                            self.session.observe_request(event.accept_len)
                        self.post(m.RequestFinished(event.row()))  # a pause's cut-off request: "cancelled" (grey)
                    case LoadPaused():
                        self._load_drained.set()
                    case LoadStarted(concurrency=concurrency, prompts=prompts):
                        self.post(m.LoadSourceChanged(prompts))
                        self._say_load(True, f"{concurrency} streams of {prompts}")
                        if self._run_worker is not None:
                            self._run_worker(self._find_no_spec_baseline(concurrency), group="baseline",
                                             exclusive=True, exit_on_error=False)
                    case LoadStopped(reason=reason, error=error):
                        if self.load is proc:  # not a load replaced by another source
                            self._say_load(False, self._load_end(error or reason))
                    case StatsUpdated() | LoadResumed():
                        pass  # figures only (above)
                    case _:
                        assert_never(event)
        finally:
            if self.load is proc:  # a load restarted on another source is already the next one
                self.load = None
            await proc.stop("stopped")

    def _load_end(self, why: str) -> str:
        """Why the load ended, and how it comes back when the user did not stop it."""
        if not self._load_wanted:
            return why
        state = self.session.state
        if state is not None and state.phase == "ready" and not self.stopped:
            return f"{why}; l starts it again"
        return f"{why}; it starts again once a server is back and verified"

    async def _find_no_spec_baseline(self, concurrency: int) -> None:
        """The tok/s plot's reference line: a saved no-speculation tok/s of this model (a thread reads runs/)."""
        from workloads.live import find_no_spec_baseline

        info = self.session.server_info or {}
        models = {str(v) for v in (self.config.model, info.get("model_path"), info.get("served_model_name")) if v}
        found = await asyncio.to_thread(find_no_spec_baseline, models, concurrency)
        if found is not None:
            self.post(m.NoSpecBaselineFound(found.tok_s, found.source))

"""ServerSession: the one long-lived owner of "the server we manage" for a config and state dir.

It owns the backend, the lifecycle (``ServerManager``: start, stop, restart, re-attach), the one
log reader (``LogFollower``), the startup tracker, verification and ``/server_info``. Readers are
thin: the console, the headless commands and the sweep engine call its methods and read its
events (``backends.server.events``), either through ``subscribe(callback)`` or
``async for event in session.events()``.

A session also notices what another ddtune does to the same state dir (a headless ``restart``
beside the console): the kernel tells it when ``server.json`` or the lifecycle lock changes
(``backends.record.watch``), and it follows the new launch's log from its first line, so its
phases, pid and verified knobs stay true without anyone re-reading ``server.json`` on a timer.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from backends.drivers.base import Backend
from backends.drivers.registry import flags
from backends.knobs.config import ServerConfig
from backends.core.errors import DdtuneError
from backends.knobs.plan import knob_text
from backends.logs.events import DecodeBatch, Fatal, ServerReady
from backends.server.logfollow import LogFollower
from backends.logs.kind import LogLine
from backends.core.paths import server_dir
from backends.logs.alarms import AcceptanceWatch, Alarm
from backends.server.events import (
    AlarmCleared, AlarmRaised, CommandRefused, ConfigChanged, DecodeStats, FatalSeen, LogBatch, NoteAdded,
    PhaseChanged, PidChanged, SessionEvent, Settled, Stopped, Verified,
)
from backends.server.startup import FAILED, READY, Progress
from backends.record.state import ServerState
from backends.server.record import load_state
from backends.record.lock import LOCK_FILE, holder

QUEUE_MAX = 4096   # events a slow events() reader may fall behind by; past it the oldest log batches go


def knob_label(before: dict[str, Any], after: dict[str, Any]) -> str:
    """``window 2048 -> 1024, topk 4 -> 6``: what changed, for markers and notes."""
    parts = [f"{k} {knob_text(before.get(k))} -> {knob_text(v)}" for k, v in after.items() if before.get(k) != v]
    return ", ".join(parts) or "same knobs"


class ServerSession:
    """Commands are methods (``up``, ``restart``, ``apply``, ``stop``); results arrive as events."""

    def __init__(self, config: ServerConfig, backend: Backend | None = None, *, gpu_sampler=None,
                 wait_for_lock: bool = True, stream_log: bool = True) -> None:
        from backends.server.lifecycle import ServerManager

        self.config = config
        self.manager = ServerManager(config, backend, on_progress=self._on_progress, on_note=self._on_note,
                                     gpu_sampler=gpu_sampler, wait_for_lock=wait_for_lock,
                                     on_launched=self._on_launched)
        self.stream_log = stream_log
        if stream_log:  # one reader for the session's life: it keeps reading after ready
            self.manager.use_log(LogFollower(self.manager.backend, self.manager.tracker, on_lines=self._on_lines,
                                             on_decode=self._on_decode, on_phase=self._on_phase))
        # else the manager reads each start's log only until ready (headless: nothing reads it after)
        self.state: ServerState | None = None
        self.progress: Progress | None = None
        self.version: str | None = None
        self.server_info: dict | None = None  # /server_info of the server as it became ready
        self.acceptance = AcceptanceWatch()  # the drafter-stopped-helping guard, per launch
        self._listeners: list[Callable[[SessionEvent], None]] = []
        self._queues: list[asyncio.Queue[SessionEvent]] = []
        self._busy = 0
        self._watcher: asyncio.Task | None = None

    @property
    def backend(self) -> Backend:
        return self.manager.backend

    @property
    def log(self) -> LogFollower:
        return self.manager.log

    @property
    def tracker(self):
        return self.manager.tracker

    def before_stop(self, hook) -> None:
        """``await hook()`` before a live server is stopped for a restart (bounded; see lifecycle)."""
        self.manager.before_stop.append(hook)

    def api_key(self) -> str | None:
        return self.backend.api_key(self.state)

    # --- events -----------------------------------------------------------------------------
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

    # --- what the manager and the log reader tell us ---------------------------------------
    def _on_progress(self, progress: Progress) -> None:
        self.progress = progress
        self._emit(PhaseChanged(progress))

    def _on_note(self, text: str) -> None:
        self._emit(NoteAdded(text))

    def _on_launched(self, state: ServerState) -> None:
        self._new_launch()
        self.state = state
        self._emit(PidChanged(state.pid, state.log_path, "ddtune"))

    def _on_phase(self) -> None:
        self.manager.report(self.state.pid if self.state else None)

    def _on_lines(self, lines: tuple[LogLine, ...], skipped: int) -> None:
        self._emit(LogBatch(lines, skipped))
        for line in lines:
            if isinstance(line.event, Fatal) and not line.event.generic:
                self._emit(FatalSeen(line.event.kind, line.event.message))

    def _on_decode(self, t: float, event: DecodeBatch) -> None:
        if event.idle:  # a burst's closing line (#token: 0): its throughput is no rate, for plots nor guard
            return
        self._emit(DecodeStats(t, event.gen_throughput, event.accept_len, event.running_req))
        self._judge(lambda: self.acceptance.decode(t, event.accept_len))

    def observe_request(self, accept_len: float | None) -> None:
        """A finished request's mean acceptance, from a load this session's reader runs (the console's):
        the collapse guard's other input, "50 requests in a row", beside the decode lines' 20 s."""
        self._judge(lambda: self.acceptance.request(accept_len))

    def _judge(self, sample: Callable[[], Alarm | None]) -> None:
        if not (self.server_info or {}).get("speculative_algorithm"):
            return  # a plain server's 1.0 is no collapse
        before = self.acceptance.alarm
        now = sample()
        if now is not None and before is None:
            self._emit(AlarmRaised(now))
        elif now is None and before is not None:
            self._emit(AlarmCleared(before.kind))

    def _new_launch(self) -> None:
        """A new server process: its acceptance is judged afresh."""
        if self.acceptance.alarm is not None:
            self._emit(AlarmCleared(self.acceptance.alarm.kind))
        self.acceptance = AcceptanceWatch()

    # --- commands ---------------------------------------------------------------------------
    def current(self) -> ServerState | None:
        return self.manager.current()

    async def up(self, keep_running_knobs: bool = False) -> ServerState:
        """Re-attach to a live server running this config, else (re)start it; wait until ready.

        ``keep_running_knobs``: a live server of this config file that runs other knobs (tuned with
        the console, a sweep or ``restart --set``) is kept, knobs and all, and a note says how they
        differ from the file; a full model reload is never the silent price of re-attaching."""
        state = await self._command(lambda: self.manager.up(keep_running_knobs))
        self.config = self.manager.config  # the running server's knobs, when up kept them
        return state

    async def restart(self, config: ServerConfig | None = None, knobs: dict[str, Any] | None = None) -> ServerState:
        """Stop the server and start it with ``config`` (or these knob changes), even if unchanged."""
        self._set_config(config or (self.config.with_knobs(knobs) if knobs else self.config))
        return await self._command(self.manager.restart)

    async def apply(self, config: ServerConfig) -> ServerState:
        """Make the server run ``config``: re-attach when it already does, else restart."""
        self._set_config(config)
        return await self._command(self.manager.up)

    async def stop(self) -> ServerState | None:
        """Stop the recorded server (``down``); None when there was none."""
        self._busy += 1
        try:
            stopped = await self.manager.down()
        except DdtuneError as exc:
            self._emit(CommandRefused(exc.message, exc.hint))
            raise
        finally:
            self._busy -= 1
        self.log.stop()
        self.state = None
        self._emit(Stopped(stopped.reason or "stopped" if stopped else "no server recorded: nothing to stop"))
        return stopped

    def _set_config(self, config: ServerConfig) -> None:
        if config.config_hash() == self.config.config_hash():
            return
        label = knob_label(self.config.knobs, config.knobs)
        self.config = config
        self.manager.set_config(config)
        self._emit(ConfigChanged(dict(config.knobs), label))

    async def _command(self, run: Callable[[], Any]) -> ServerState:
        self._busy += 1
        try:
            state = await run()
        except DdtuneError as exc:
            self._emit(CommandRefused(exc.message, exc.hint))
            raise
        finally:
            self._busy -= 1
        await self._settle(state)
        return state

    async def _settle(self, state: ServerState) -> None:
        if state.phase == "ready":
            info = self.manager.server_info
            if info is None:  # re-attached without a start: ask once
                from backends.server.lifecycle import fetch_server_info

                info = await fetch_server_info(state.url, self.backend.api_key(state))
            self.server_info = info
            self.version = str(info["version"]) if info and info.get("version") else None
            self.manager.server_info = None
            if self.stream_log:
                self.log.follow(state)  # a re-attach did not read the log yet
        self.state = state  # with the version and log known: readers see one consistent settle
        if state.phase == "ready":
            self._emit(Verified(state.checks))
        self._emit(Settled(state, self.version))

    # --- another ddtune on the same state dir ----------------------------------------------
    def watch(self) -> None:
        """Start following what other processes do to this state dir (until ``close``)."""
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        from backends.record.watch import DirWatch

        async for names in DirWatch(server_dir(), {"server.json", LOCK_FILE}).changes():
            if self._busy:
                continue  # our own command writes these files
            if LOCK_FILE in names:
                self._lock_changed()
            if "server.json" in names:
                await self._state_changed()

    def _lock_changed(self) -> None:
        doc = holder()
        if not doc or doc.get("pid") == os.getpid():
            return
        from backends.record.lock import describe_holder_doc

        self._emit(NoteAdded(describe_holder_doc(doc)))
        if doc.get("action") in ("restart", "down"):
            self.tracker.begin_stop(time.monotonic())
            self.manager.report(self.state.pid if self.state else None)

    async def _state_changed(self) -> None:
        state = load_state(self._on_note)
        old = self.state
        if state is None:
            if old is not None:
                self.state = None
                self.log.stop()
                self._emit(Stopped("the server was stopped by another ddtune"))
            return
        if flags(state.backend).attaches:
            return
        launched = old is None or (state.pid, state.started_at) != (old.pid, old.started_at)
        if launched:
            self.state = state
            if state.knobs != self.config.knobs:
                label = knob_label(self.config.knobs, dict(state.knobs))
                self.config = self.config.with_knobs(dict(state.knobs))
                self.manager.set_config(self.config)
                self._emit(ConfigChanged(dict(state.knobs), label))
            if state.phase == "starting":
                self.tracker.begin_wait(time.monotonic(), f"pid {state.pid}, launched by another ddtune")
                self.manager.report(state.pid)
            self._new_launch()
            self._emit(PidChanged(state.pid, state.log_path, "another ddtune"))
            self.log.follow(state)
        if state.phase in ("ready", "failed") and (launched or old is None or old.phase != state.phase):
            now = time.monotonic()
            if state.phase == "ready" and self.tracker.phase != READY:
                self.tracker.feed(ServerReady(), now)
            elif state.phase == "failed" and self.tracker.phase != FAILED:
                self.tracker.fail((state.reason or "failed").split("\n")[0], now)
            self.manager.report(state.pid)
            await self._settle(state)

    # --- leaving ----------------------------------------------------------------------------
    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        self.log.stop()

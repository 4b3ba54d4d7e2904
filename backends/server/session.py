"""ServerSession: the one owner of "the server we manage" for a config and state dir.

It holds the one config (``session.config`` is its driver's), the server's record (server.json,
written only through its ``RecordFile``), the one log reader, the startup tracker (moved and
reported only by its ``Phases``), verification and ``/server_info``; and it runs the lifecycle
(start, restart, stop, re-attach, adopt a lost launch), one action at a time per state dir across
processes. Readers call its methods and read its events: ``subscribe(callback)`` or ``async for
event in session.events()``.

The safe, visible, verified restart, the same for every driver: stop the old server (lifecycle.py)
-> wait until its port is free and its pids hold no GPU memory (release.py) -> launch, recorded
before it exists (launchrec.py) -> follow the log -> ready only when the pid we started owns the
socket and generates a token (ready.py) -> verify the requested knobs against what the server
reports -> record it. What another ddtune does to the same state dir (a headless ``restart`` beside
the console) reaches the session through watcher.py; it follows that launch's log from its first
line, so nobody re-reads ``server.json`` on a timer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, assert_never

from backends.core.apikey import shown_argv
from backends.core.errors import DdtuneError
from backends.core.phase import Phase
from backends.drivers.base import Driver
from backends.drivers.registry import driver_flags, make_driver
from backends.knobs.config import ServerConfig
from backends.knobs.plan import LaunchPlan, plan_for_endpoint, plan_launch
from backends.knobs.verify import verify
from backends.launch.ownership import describe_stop
from backends.launch.readiness import ReadinessProbe, fetch_server_info
from backends.logs.alarms import AcceptanceWatch, Alarm
from backends.logs.events import DecodeBatch, Fatal
from backends.logs.kind import LogLine
from backends.record.lock import LifecycleLock, describe_holder_doc
from backends.record.state import ServerState
from backends.server.events import (
    AlarmCleared, AlarmRaised, CommandRefused, ConfigChanged, DecodeStats, EventHub, FatalSeen, LogBatch,
    NoteAdded, PhaseChanged, PidChanged, Settled, Stopped, Verified,
)
from backends.server.launchrec import adopt_lost_launch, launch_recorded, prove_recordable
from backends.server.lifecycle import (
    OtherConfigRuns, refuse_other_config, running_knobs, stop_for_down, stop_for_restart, uncancelled,
)
from backends.server.logfollow import TAIL_LINES, LogFacts, LogFollower
from backends.server.phases import Phases
from backends.server.ready import until_ready
from backends.server.record import RecordFile
from backends.server.release import GPU_RELEASE_S, wait_gpu_released, wait_port_released
from backends.server.snapshot import as_it_stands
from backends.server.startup import Progress, StartupHistory, StartupTracker
from backends.server.watcher import LockTaken, RecordChanged, foreign_changes


class ServerSession(EventHub):
    """Commands are methods (``up``, ``restart``, ``apply``, ``stop``); results arrive as events."""

    def __init__(self, config: ServerConfig, backend: Driver | None = None, *, gpu_sampler=None,
                 wait_for_lock: bool = True, stream_log: bool = True) -> None:
        super().__init__()
        self.backend = backend or make_driver(config)
        self.backend.config = config  # the one copy of the config: the driver's (``config`` below)
        self.record = RecordFile()
        self.history = StartupHistory.default()
        self.tracker = StartupTracker(self.history.medians(config.startup_key()))  # this server's own starts
        # one reader for the session's life; streaming, it keeps reading after ready (the console),
        # else it reads each start's log only until ready (headless: nothing reads it after)
        self.stream_log = stream_log
        self.phases = Phases(self.tracker, self._on_progress, every_line=stream_log)
        self.log = LogFollower(self.phases, on_lines=self._on_lines if stream_log else None,
                               on_decode=self._on_decode if stream_log else None)
        self.gpu_sampler = gpu_sampler  # None: a fresh backends.machine.gpu.GpuSampler per check
        self.gpu_release_s = GPU_RELEASE_S
        self.wait_for_lock = wait_for_lock
        self._before_stop: list[Callable[[], Awaitable[None]]] = []
        self._state: ServerState | None = None
        self.progress: Progress | None = None
        self.version: str | None = None
        self.server_info: dict | None = None  # /server_info of the server as it became ready
        self._fresh_info: dict | None = None  # ... as this command's start fetched it (not yet settled)
        self.acceptance = AcceptanceWatch()  # the drafter-stopped-helping guard, per launch
        self._watcher: asyncio.Task | None = None
        self.probe_count = 0                    # 1-token generations the last start's readiness probe sent
        self.probe_ok_at: float | None = None   # monotonic: the probe's generation came back
        self.settled_at: float | None = None    # monotonic: info fetched, knobs checked, state written

    @property
    def config(self) -> ServerConfig:
        """The config the session manages the server with (held by its driver: one copy)."""
        return self.backend.config

    @property
    def state(self) -> ServerState | None:
        """The server as this session last knew it settled or launched (None: none runs)."""
        return self._state

    @state.setter
    def state(self, state: ServerState | None) -> None:
        self._state = state
        self.phases.pid = state.pid if state is not None else None  # the pid log lines' reports name

    def before_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """``await hook()`` before a live server is stopped for a restart (bounded: BEFORE_STOP_S)."""
        self._before_stop.append(hook)

    def api_key(self) -> str | None:
        return self.backend.api_key(self.state)

    def fatals_of(self, state: ServerState) -> tuple[Fatal, ...]:
        """The fatal lines the log of ``state``'s launch said, as far as this session read it."""
        return tuple(self.log.facts.fatals) if state.log_path and self.log.log_path == state.log_path else ()

    # --- what the phases and the log reader tell us ----------------------------------------
    def _on_progress(self, progress: Progress) -> None:
        self.progress = progress
        self._emit(PhaseChanged(progress))

    def _on_note(self, text: str) -> None:
        self._emit(NoteAdded(text))

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

    def _launched(self, state: ServerState, by: str) -> None:
        """A new server process: its acceptance is judged afresh, and readers hear its pid."""
        if self.acceptance.alarm is not None:
            self._emit(AlarmCleared(self.acceptance.alarm.kind))
        self.acceptance = AcceptanceWatch()
        self.state = state
        self._emit(PidChanged(state.pid, state.log_path, by))

    # --- commands ---------------------------------------------------------------------------
    def current(self) -> ServerState | None:
        """The recorded server, with phase ``stale`` when its pid is gone or was reused."""
        return as_it_stands(self.record.load(self._on_note))

    async def up(self, keep_running_knobs: bool = False, replace: bool = False) -> ServerState:
        """Re-attach to a live server running this config, else (re)start it; wait until ready.

        ``keep_running_knobs``: a live server of this config file that runs other knobs (tuned with
        the console, a sweep or ``restart --set``) is kept, knobs and all, and a note says how they
        differ from the file; a full model reload is never the silent price of re-attaching.
        ``replace``: a live server of another config file may be stopped (else OtherConfigRuns)."""
        return await self._command(lambda: self._up(keep_running_knobs, replace))

    async def restart(self, config: ServerConfig | None = None, knobs: dict[str, Any] | None = None,
                      replace: bool = False) -> ServerState:
        """Stop the server and start it with ``config`` (or these knob changes), even if unchanged."""
        self._set_config(config or (self.config.with_knobs(knobs) if knobs else self.config))
        return await self._command(lambda: self._restart(replace))

    async def apply(self, config: ServerConfig) -> ServerState:
        """Make the server run ``config``: re-attach when it already does, else restart."""
        self._set_config(config)
        return await self._command(self._up)

    async def stop(self) -> ServerState | None:
        """Stop the recorded server (``down``); None when there was none. The returned state's
        ``reason`` says what was stopped. Raises NotOurs (the record set aside) when it proves nothing."""
        try:
            async with self._lock("down"):
                stopped = await stop_for_down(adopt_lost_launch(self.record, self._on_note), self.backend,
                                              self.record)
        except DdtuneError as exc:
            self._emit(CommandRefused(exc.message, exc.hint))
            raise
        self.log.stop()
        self.state = None
        self._emit(Stopped(stopped.reason or "stopped" if stopped else "no server recorded: nothing to stop"))
        return stopped

    def _set_config(self, config: ServerConfig) -> None:
        """Manage the server under ``config`` from now on and say how its knobs differ (ConfigChanged)."""
        if config.config_hash() == self.config.config_hash():
            return
        changed = ConfigChanged.between(self.config.knobs, config.knobs)
        self._use_config(config)
        self._emit(changed)

    def _use_config(self, config: ServerConfig) -> None:
        """Manage the server under ``config`` from now on. The same driver object while the backend
        stays (a child it launched can still be reaped and its exit code read), a new one otherwise."""
        if config.backend == self.backend.NAME:
            self.backend.config = config
        else:
            self.backend = make_driver(config)
        self.tracker.expected = dict(self.history.medians(config.startup_key()))

    async def _command(self, run: Callable[[], Awaitable[ServerState]]) -> ServerState:
        try:
            state = await run()
        except DdtuneError as exc:
            self._emit(CommandRefused(exc.message, exc.hint, exc.state if isinstance(exc, OtherConfigRuns) else None))
            raise
        await self._settle(state)
        return state

    async def _settle(self, state: ServerState) -> None:
        if state.phase == Phase.READY:
            info, self._fresh_info = self._fresh_info, None
            if info is None:  # re-attached without a start: ask once
                info = await fetch_server_info(state.url, self.backend.api_key(state), self._on_note,
                                               self.backend.DIALECT)
            self.server_info = info
            self.version = str(info["version"]) if info and info.get("version") else None
            if self.version is None and state.engine:  # what the start learned from the driver
                self.version = state.engine.removeprefix(self.backend.DIALECT.engine).strip() or None
            if self.stream_log:
                self.log.follow(state, self.backend)  # a re-attach did not read the log yet
        self.log.flush()  # the lines that led here reach readers before the settle they explain
        self.state = state  # with the version and log known: readers see one consistent settle
        if state.phase == Phase.READY:
            self._emit(Verified(state.checks))
        self._emit(Settled(state, self.version))

    # --- the lifecycle ----------------------------------------------------------------------
    def _lock(self, action: str) -> LifecycleLock:
        """One lifecycle action at a time per state dir, across processes (see backends.record.lock)."""
        recorded = self.record.load(self._on_note)
        return LifecycleLock(action, recorded.pid if recorded else None, on_wait=self._on_note,
                             wait=self.wait_for_lock)

    def _plan(self) -> LaunchPlan:
        """Validate knobs against the server's --help (blocking). Raises before anything is stopped."""
        helptext = self.backend.learn_help()
        return plan_launch(self.config, helptext.text, self.backend.command_prefix(), helptext.version or "unknown")

    async def _up(self, keep_running_knobs: bool = False, replace: bool = False) -> ServerState:
        """Decided under the lock, on the one read of the record."""
        if self.backend.ATTACHES:
            self.phases.waiting(self.backend.base_url)
            return await self._follow(self.backend.attach_state(), plan_for_endpoint(self.config))
        async with self._lock("up"):
            recorded = adopt_lost_launch(self.record, self._on_note)
            state = as_it_stands(recorded)
            refuse_other_config(state, self.config, replace)
            live = state is not None and state.backend == self.config.backend and state.phase.live
            why = "it already runs this config"
            if live and keep_running_knobs and state is not None and state.config_hash != self.config.config_hash():
                kept = running_knobs(self.config, state)
                if kept is not None:
                    self._set_config(kept[0])  # readers (the console's A/B) label what runs, not the file
                    why = kept[1]
            if live and state is not None and state.config_hash == self.config.config_hash():
                return await self._reattach(state, why)
            return await self._restart_locked(recorded)

    async def _reattach(self, state: ServerState, why: str) -> ServerState:
        """Follow a server an earlier ddtune started (same pid, same start time) until it is ready;
        ``why``: what it runs (this config, or its own knobs kept), said in the one note."""
        self._on_note(f"re-attached to pid {state.pid} ({state.phase}): {why}")
        if state.phase == Phase.READY:
            async with ReadinessProbe(state.url, state.port, state.pid, api_key=self.backend.api_key(state),
                                      dialect=self.backend.DIALECT) as probe:
                result = await probe.probe()
            if result.ready:
                return state
            self._on_note(f"it does not generate now ({result.reason}); following it")
            self.phases.waiting("re-attached")
        else:  # launched, its port and GPU were free then: importing until its log says more (read next)
            self.phases.starting(f"pid {state.pid} importing (re-attached)")
        plan = await asyncio.to_thread(self._plan)
        return await self._follow(state, plan)

    async def _restart(self, replace: bool = False) -> ServerState:
        async with self._lock("restart"):
            recorded = adopt_lost_launch(self.record, self._on_note)
            refuse_other_config(as_it_stands(recorded), self.config, replace)
            return await self._restart_locked(recorded)

    async def _restart_locked(self, old: ServerState | None) -> ServerState:
        """``old``: the record as read under the lock (nobody else writes it while the lock is held)."""
        if not self.backend.CAN_START:
            await self.backend.start(None)  # type: ignore[arg-type]  # raises the driver's own message
        plan = await asyncio.to_thread(self._plan)
        prove_recordable(self.backend, plan, old)  # the new launch can be recorded: only then stop the old
        # this launch's ETA from the starts recorded so far; a line of them that is unusable is said here
        self.tracker.expected = self.history.medians(self.config.startup_key(), self._on_note)
        ticker = asyncio.create_task(self.phases.heartbeat())
        try:
            self.phases.stopping()
            port_pids, gpu_pids = await stop_for_restart(old, self.backend, self.record, self._on_note,
                                                         self._before_stop)
            self.phases.waiting(f"port {self.config.port}")
            await wait_port_released(self.config.port, port_pids)
            await self._wait_gpu(gpu_pids)
            state = await uncancelled(launch_recorded(self.backend, plan, self.record))
        finally:
            ticker.cancel()
        self.phases.starting(f"pid {state.pid} importing")  # port and GPU were free; now the imports
        self._launched(state, "ddtune")
        self._on_note(f"launched pid {state.pid}: {' '.join(shown_argv(plan.argv))}")
        return await self._follow(state, plan)

    async def _wait_gpu(self, pids: set[int]) -> None:
        def waiting(holders: set[int]) -> None:
            self.phases.waiting(f"GPU memory of pids {sorted(holders)}")

        await wait_gpu_released(pids, self.gpu_release_s, self.gpu_sampler, self._on_note, waiting)

    async def _follow(self, state: ServerState, plan: LaunchPlan | None) -> ServerState:
        """Track the start until ready, failed or timed out; record and return the final state."""
        facts = self.log.follow(state, self.backend)
        try:
            outcome = await until_ready(self.backend, state, facts, self.log, self.phases, self.config.ready_timeout_s)
        finally:
            if not self.stream_log:  # headless: nothing reads the log after the start
                await asyncio.sleep(0)
                self.log.stop()
        self.probe_count, self.probe_ok_at = outcome.probes, outcome.ok_at
        if outcome.failure is not None:
            return await self._failed(state, outcome.failure, facts)
        return await self._ready(state, plan, facts)

    async def _failed(self, state: ServerState, reason: str, facts: LogFacts) -> ServerState:
        self.phases.failed(reason, state.pid)
        if self.backend.CAN_STOP and state.pid:
            report = await self.backend.stop(state)  # leave nothing running: hung loads and orphans included
            if report.stopped:
                self._on_note(describe_stop(state.pid, report))
        tail = "\n".join(facts.last_lines(TAIL_LINES))
        final = state.with_(phase=Phase.FAILED, reason=reason + (f"\n--- last log lines ---\n{tail}" if tail else ""))
        self.record.save(final)
        if not self.backend.ATTACHES:  # an attach times no start of its own
            self.history.append(self.config.startup_key(), self.tracker.durations(time.monotonic()), False,
                                time.time(), self.config.model)
        return final

    async def _ready(self, state: ServerState, plan: LaunchPlan | None, facts: LogFacts) -> ServerState:
        self.phases.ready(state.pid)
        durations = self.tracker.durations(time.monotonic())
        info = self._fresh_info = await fetch_server_info(state.url, self.backend.api_key(state), self._on_note,
                                                          self.backend.DIALECT)
        checked = verify(plan.expected if plan else {}, facts.marked, info, knobs=self.config.knobs,
                         table=self.config.knob_table)
        version = (info or {}).get("version") or await asyncio.to_thread(self.backend.installed_version)
        if info is not None and not info.get("version") and version:
            info["version"] = version
        final = state.with_(
            phase=Phase.READY, ready_at=time.time(), effective=checked.effective, checks=checked.checks, reason=None,
            engine=f"{self.backend.DIALECT.engine} {version or '(version unknown)'}",
        )
        self.record.save(final)
        self.settled_at = time.monotonic()
        if not self.backend.ATTACHES:
            self.history.append(self.config.startup_key(), durations, True, time.time(), self.config.model)
        return final

    # --- another ddtune on the same state dir ----------------------------------------------
    def watch(self) -> None:
        """Start following what other processes do to this state dir (until ``close``)."""
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        async for change in foreign_changes(self.record, self._on_note):
            match change:
                case LockTaken(holder=holder):
                    self._emit(NoteAdded(describe_holder_doc(holder)))
                    if holder.get("action") in ("restart", "down"):
                        self.phases.stopping(self.state.pid if self.state else None)
                case RecordChanged(state=state):
                    await self._record_changed(state)
                case _:
                    assert_never(change)

    async def _record_changed(self, state: ServerState | None) -> None:
        old = self.state
        if state is None:
            if old is not None:
                self.state = None
                self.log.stop()
                self._emit(Stopped("the server was stopped by another ddtune"))
            return
        if driver_flags(state.backend).attaches:
            return
        launched = old is None or (state.pid, state.started_at) != (old.pid, old.started_at)
        if launched:
            self.state = state
            if state.knobs != self.config.knobs:
                self._set_config(self.config.with_knobs(dict(state.knobs)))
            if state.phase == Phase.STARTING:
                self.phases.waiting(f"pid {state.pid}, launched by another ddtune", state.pid)
            self._launched(state, "another ddtune")
            self.log.follow(state, self.backend)
        if state.phase.settled and (launched or old is None or old.phase != state.phase):
            if state.phase == Phase.READY:
                await self.log.read_past_start()  # its loading and capture lines first (read late on a busy box)
                self.phases.ready(state.pid)
            elif self.tracker.phase != Phase.FAILED:
                self.phases.failed((state.reason or "failed").split("\n")[0], state.pid)
            await self._settle(state)

    # --- leaving ----------------------------------------------------------------------------
    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        self.log.stop()

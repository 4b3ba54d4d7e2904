"""The safe, visible, verified restart, the same for every backend.

stop the old server (abort in-flight, SIGTERM, bounded wait, SIGKILL of the process group) ->
wait until the port is free and the old pids hold no GPU memory -> launch -> follow the log through
StartupTracker -> ready only when the pid we started (the one in ``Started server process [PID]``)
owns the socket and generates a token -> verify requested knobs against what the server reports.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


from backends.drivers.base import Backend
from backends.knobs.config import ServerConfig
from backends.drivers.registry import alive, driver_of, flags, make_backend
from backends.core.errors import UsageError
from backends.knobs.plan import LaunchPlan, knob_text, plan_for_endpoint, plan_launch
from backends.server.launchrec import adopt_lost_launch, launch_recorded
from backends.logs.events import ServerReady
from backends.server.logfollow import TAIL_LINES, LogFacts, LogFollower
from backends.core.apikey import shown_argv
from backends.launch.ownership import NotOurs, describe_stop
from backends.launch.process import tree_pids
from backends.launch.readiness import ReadinessProbe, fetch_server_info  # noqa: F401  (re-exported: its old home)
from backends.server.release import GPU_RELEASE_S, wait_gpu_released, wait_port_released
from backends.server.startup import READY, WAITING, Progress, StartupHistory, StartupTracker
from backends.record.state import ServerState
from backends.server.record import clear_state, load_state, quarantine_state, save_state
from backends.server.snapshot import as_it_stands
from backends.record.lock import LifecycleLock
from backends.knobs.verify import verify

FATAL_GRACE_S = 2.0     # after a fatal line, wait this long (or for the exit) for the lines that explain it
BEFORE_STOP_S = 10.0    # the most a before_stop hook may delay a restart
HEARTBEAT_S = 5.0       # repeat an unchanged phase this often, so a long wait still shows progress


class ServerManager:
    """Start, restart, stop and re-attach the configured server. ``on_progress`` gets every change."""

    def __init__(self, config: ServerConfig, backend: Backend | None = None,
                 on_progress: Callable[[Progress], None] | None = None,
                 on_note: Callable[[str], None] | None = None, gpu_sampler=None,
                 wait_for_lock: bool = True, log: LogFollower | None = None,
                 on_launched: Callable[[ServerState], None] | None = None) -> None:
        self.config = config
        self.gpu_sampler = gpu_sampler  # None: a fresh backends.machine.gpu.GpuSampler per check
        self.gpu_release_s = GPU_RELEASE_S
        self.backend = backend or make_backend(config)
        self.on_progress = on_progress or (lambda p: None)
        self.on_note = on_note or (lambda s: None)
        self.on_launched = on_launched or (lambda state: None)
        # awaited before a live server is stopped for a restart (the console pauses its load here,
        # so requests in flight are cancelled by the client, not failed by the dying server)
        self.before_stop: list[Callable[[], Awaitable[None]]] = []
        self.history = StartupHistory.default()
        self.tracker = StartupTracker(self.history.medians(config.startup_key()))  # this server's own starts
        self._last_report: tuple[str, str] | None = None
        self._last_time = 0.0
        self.probe_count = 0
        self.server_info: dict | None = None  # /server_info of the last server made ready
        self.probe_ok_at: float | None = None   # monotonic: the probe's generation came back
        self.settled_at: float | None = None    # monotonic: info fetched, knobs checked, state written
        self.wait_for_lock = wait_for_lock
        # the one reader of the server's log: a ServerSession passes its own (which keeps reading
        # after ready, for the console); alone, the manager reads the log only while it follows a start
        self._own_log = log is None
        self.log = log or LogFollower(self.backend, self.tracker)
        self.log.markers = config.knob_table.log_markers()

    def use_log(self, log: LogFollower) -> None:
        """Read the log through ``log`` (a session's follower, which outlives each start)."""
        self.log.stop()
        self._own_log, self.log = False, log
        log.markers = self.config.knob_table.log_markers()

    def set_config(self, config: ServerConfig) -> None:
        """Manage the same server under another config (new knobs): same backend object, so a child
        launched before can still be reaped and its exit code read."""
        self.config = config
        if config.backend == self.backend.NAME:
            self.backend.config = config
        else:
            self.backend = make_backend(config)
            self.log.backend = self.backend
        self.tracker.expected = dict(self.history.medians(config.startup_key()))
        self.log.markers = config.knob_table.log_markers()  # what verification reads from the log

    # --- reporting --------------------------------------------------------------------------
    def report(self, pid: int | None = None) -> None:
        """Report the tracker's phase now if it changed (log lines move it outside ``_follow`` too)."""
        self._report(pid)

    def _report(self, pid: int | None = None, probing: bool = False, force: bool = False) -> None:
        now = time.monotonic()
        t = self.tracker
        phase, detail = t.phase, t.detail
        if phase == READY and probing:
            phase, detail = "warmup", "log says ready; probing the new pid"
        key = (phase, detail)
        if key == self._last_report and not force and now - self._last_time < HEARTBEAT_S:
            return
        self._last_report, self._last_time = key, now
        self.on_progress(Progress(phase, detail, t.elapsed(now), t.phase_elapsed(now), t.eta_s(now), pid))

    # --- state ------------------------------------------------------------------------------
    def current(self) -> ServerState | None:
        """The recorded server, with phase ``stale`` when its pid is gone or was reused."""
        return as_it_stands(load_state(self.on_note))

    def plan(self) -> LaunchPlan:
        """Validate knobs against the server's --help (blocking). Raises before anything is stopped."""
        helptext = self.backend.learn_help()
        return plan_launch(self.config, helptext.text, self.backend.command_prefix(), helptext.version or "unknown")

    # --- commands ---------------------------------------------------------------------------
    def _lock(self, action: str) -> LifecycleLock:
        """One lifecycle action at a time per state dir, across processes (see backends.record.lock)."""
        recorded = load_state(self.on_note)
        return LifecycleLock(action, recorded.pid if recorded else None, on_wait=self.on_note,
                             wait=self.wait_for_lock)

    async def up(self, keep_running_knobs: bool = False) -> ServerState:
        """Ready server for this config: re-attach to a live one with the same config, else (re)start.

        ``keep_running_knobs``: a live server of this config that differs only in knobs (tuned with
        the console, a sweep or ``restart --set``) is kept, knobs and all (``self.config`` takes
        them), and a note says how they differ from the file: a model reload is never the silent
        price of re-attaching. Decided under the lock, on the one read of the state."""
        if self.backend.ATTACHES:
            return await self.attach_endpoint()
        async with self._lock("up"):
            adopt_lost_launch(self.on_note)
            state = self.current()
            live = state is not None and state.backend == self.config.backend \
                and state.phase in ("ready", "starting") and alive(state)
            if live and keep_running_knobs and state is not None and state.config_hash != self.config.config_hash():
                self._keep_running_knobs(state)
            if live and state is not None and state.config_hash == self.config.config_hash():
                return await self.reattach(state)
            return await self._restart_locked()

    def _keep_running_knobs(self, state: ServerState) -> None:
        running = self.config.with_knobs(dict(state.knobs))
        if running.config_hash() != state.config_hash:
            return  # it differs in more than knobs (model, flags, env): the file wins, with a restart
        file_knobs = self.config.knobs
        diff = ", ".join(f"{k}={knob_text(v)} (the file says {knob_text(file_knobs.get(k))})"
                         for k, v in state.knobs.items() if file_knobs.get(k) != v)
        self.set_config(running)
        self.on_note(f"pid {state.pid} runs {diff}: keeping its knobs; apply the config file with "
                     f"`ddtune up --apply-config` (or `a` in the console)")

    async def reattach(self, state: ServerState) -> ServerState:
        """Follow a server an earlier ddtune started (same pid, same start time) until it is ready."""
        self.on_note(f"re-attached to pid {state.pid} ({state.phase}): it already runs this config")
        if state.phase == "ready":
            async with ReadinessProbe(state.url, state.port, state.pid) as probe:
                result = await probe.probe()
            if result.ready:
                return state
            self.on_note(f"it does not generate now ({result.reason}); following it")
        self.tracker.begin_wait(time.monotonic(), "re-attached")
        plan = await asyncio.to_thread(self.plan)
        return await self._follow(state, plan)

    async def restart(self) -> ServerState:
        async with self._lock("restart"):
            adopt_lost_launch(self.on_note)
            return await self._restart_locked()

    async def _restart_locked(self) -> ServerState:
        if not self.backend.CAN_START:
            await self.backend.start(None)  # type: ignore[arg-type]  # raises the backend's own message
        plan = await asyncio.to_thread(self.plan)
        ticker = asyncio.create_task(self._tick())
        try:
            return await self._restart(plan)
        finally:
            ticker.cancel()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            if self.tracker.phase in ("stopping-old", "waiting-for-port-and-gpu"):
                self._report()

    async def _restart(self, plan: LaunchPlan) -> ServerState:
        old = load_state(self.on_note)
        now = time.monotonic()
        self.tracker.begin_stop(now)
        self._report(force=True)
        old_pids: set[int] = set()
        gpu_pids: set[int] = set()
        if old is not None and flags(old.backend).spawns and old.pid is not None:
            stopper = driver_of(old, self.backend)
            if alive(old):
                for hook in self.before_stop:
                    try:
                        await asyncio.wait_for(hook(), BEFORE_STOP_S)
                    except TimeoutError:
                        self.on_note(f"a pre-stop step took over {BEFORE_STOP_S:.0f} s; stopping anyway")
                self.on_note(f"stopping old server pid {old.pid} (SIGTERM, then SIGKILL after "
                             f"{self.config.stop_timeout_s:.0f} s)")
            try:
                report = await stopper.stop(old)
            except NotOurs as exc:
                self.on_note(f"{exc.message}; {quarantine_state('refused')}")
                old = None
            else:
                old_pids = set(report.stopped) | ({old.pid} if old.pid is not None else set())
                if stopper.OWNS_GPU_MEMORY:  # what they hold is freed only as they exit
                    gpu_pids = old_pids
                self.on_note(describe_stop(old.pid, report))
        elif self.backend.STOPS_BY_UNIT:  # the unit is stopped whatever the record says
            await self.backend.stop(old)
        else:
            self.on_note("no server of ours is running: nothing to stop")
        if old is not None:
            clear_state()
        self.tracker.begin_wait(time.monotonic(), f"port {self.config.port}")
        self._report()
        await self._wait_port(old_pids)
        await self._wait_gpu(gpu_pids)
        return await self._launch(plan)

    async def down(self) -> ServerState | None:
        """Stop the recorded server, or what its dead leader left running. The returned state's
        ``reason`` says what was stopped. Raises NotOurs (record set aside) when it proves nothing."""
        async with self._lock("down"):
            state = adopt_lost_launch(self.on_note)
            if flags(state.backend).attaches if state is not None else self.backend.ATTACHES:
                url = state.url if state is not None else self.config.base_url
                raise UsageError(f"cannot stop an endpoint server: ddtune only attaches to {url}, it did not start it",
                                 hint="stop it where it runs; `ddtune down` stops servers ddtune started "
                                      "(backend sglang, sim or systemd)")
            if state is None:
                return None
            if not self.backend.CAN_STOP:
                await self.backend.stop(state)  # raises: cannot stop
            if flags(state.backend).stops_by_unit:
                await self.backend.stop(state)
                summary = f"stopped unit {state.unit or self.config.unit}"
            else:
                stopper = driver_of(state, self.backend)
                try:
                    report = await stopper.stop(state)
                except NotOurs as exc:
                    raise NotOurs(exc.message, hint=f"{quarantine_state('refused')}; {exc.hint}") from None
                summary = describe_stop(state.pid, report)
                if state.phase == "failed" and not report.leader_alive:
                    why = (state.reason or "no reason recorded").splitlines()[0][:120]
                    summary += f" (its start had failed: {why})"
            clear_state()
            return state.with_(phase="stopped", reason=summary)

    # --- steps ------------------------------------------------------------------------------
    async def _wait_port(self, old_pids: set[int]) -> None:
        await wait_port_released(self.config.port, old_pids)

    async def _wait_gpu(self, old_pids: set[int]) -> None:
        def waiting(holders: set[int]) -> None:
            self.tracker.begin_wait(time.monotonic(), f"GPU memory of pids {sorted(holders)}")
            self._report()

        await wait_gpu_released(old_pids, self.gpu_release_s, self.gpu_sampler, self.on_note, waiting)

    async def _launch(self, plan: LaunchPlan) -> ServerState:
        state = await _uncancelled(self._spawn(plan))
        if not self.backend.ATTACHES:  # port and GPU were free; now the imports
            self.tracker.begin_start(time.monotonic(), f"pid {state.pid} importing")
        self.on_launched(state)
        self.on_note(f"launched pid {state.pid}: {' '.join(shown_argv(plan.argv))}")
        return await self._follow(state, plan)

    async def _spawn(self, plan: LaunchPlan) -> ServerState:
        return await launch_recorded(self.backend, plan)  # recorded before it exists: backends.server.launchrec

    async def _follow(self, state: ServerState, plan: LaunchPlan | None) -> ServerState:
        """Track the start until ready, failed or timed out; record and return the final state."""
        facts = self.log.follow(state)
        deadline = time.monotonic() + self.config.ready_timeout_s
        failure: str | None = None
        attached = self.backend.ATTACHES
        grace = self.backend.connect_grace()  # an attach where nobody listens fails fast
        try:
            async with ReadinessProbe(
                state.url,
                state.port,
                state.pid,
                api_key=self.backend.api_key(state),
                check_owner=not attached,
            ) as probe:
                while True:
                    self._report(state.pid, probing=True)
                    running = await self.backend.is_running(state)
                    if not running:
                        await self.log.settle()  # let the reader take the last lines of the log
                        code = await self.backend.exit_code(state)
                        why = facts.fatal_reason() if facts.fatals else "no fatal line in the log"
                        exited = "the server exited" + ("" if code is None else f" with code {code}")
                        failure = f"{exited} before it was ready; {why}"
                        break
                    if facts.fatal_at is not None and time.monotonic() - facts.fatal_at > FATAL_GRACE_S:
                        failure = facts.fatal_reason()  # the first fatal line plus what followed it
                        break
                    if time.monotonic() >= deadline:
                        failure = (f"not ready after {self.config.ready_timeout_s:.0f} s (ready_timeout_s) "
                                   f"in phase {self.tracker.phase}")
                        break
                    # with a log, probe only once it named our pid in "Started server process [PID]"
                    pid_ok = attached or not self.backend.has_logs() or facts.started_pid is not None
                    if facts.started_pid is not None and state.pid and facts.started_pid not in tree_pids(state.pid):
                        pid_ok = False
                    if pid_ok:
                        result = await probe.probe()
                        self.probe_count = probe.generations
                        if result.ready:
                            self.probe_ok_at = time.monotonic()  # detection ends; bookkeeping begins
                            break
                        if grace is not None:
                            detail, failure = grace.check(result, time.monotonic())
                            if detail and self.tracker.phase == WAITING:  # "connection refused at URL"
                                self.tracker.begin_wait(time.monotonic(), detail)
                                self._report(force=True)
                            if failure is not None:
                                break
                    else:
                        await asyncio.sleep(0.1)
        finally:
            if self._own_log:
                await asyncio.sleep(0)
                self.log.stop()
        if failure is not None:
            return await self._failed(state, failure, facts)
        return await self._ready(state, plan, facts)

    async def _failed(self, state: ServerState, reason: str, facts: LogFacts) -> ServerState:
        self.tracker.fail(reason, time.monotonic())
        self._report(state.pid)
        if self.backend.CAN_STOP and state.pid:
            report = await self.backend.stop(state)  # leave nothing running: hung loads and orphans included
            if report.stopped:
                self.on_note(describe_stop(state.pid, report))
        tail = "\n".join(facts.last_lines(TAIL_LINES))
        final = state.with_(phase="failed", reason=reason + (f"\n--- last log lines ---\n{tail}" if tail else ""))
        save_state(final)
        if not self.backend.ATTACHES:  # an attach times no start of its own
            self.history.append(self.config.startup_key(), self.tracker.durations(time.monotonic()), False,
                                time.time(), self.config.model)
        return final

    async def _ready(self, state: ServerState, plan: LaunchPlan | None, facts: LogFacts) -> ServerState:
        now = time.monotonic()
        if self.tracker.phase != READY:
            self.tracker.feed(ServerReady(), now)
        durations = self.tracker.durations(now)
        self._report(state.pid)
        info = await fetch_server_info(state.url, self.backend.api_key(state))
        self.server_info = info
        expected = plan.expected if plan else {}
        checked = verify(expected, facts.marked, info, knobs=self.config.knobs, table=self.config.knob_table)
        final = state.with_(
            phase="ready", ready_at=time.time(), effective=checked.effective, checks=checked.checks, reason=None
        )
        save_state(final)
        self.settled_at = time.monotonic()
        if not self.backend.ATTACHES:
            self.history.append(self.config.startup_key(), durations, True, time.time(), self.config.model)
        return final

    async def attach_endpoint(self) -> ServerState:
        state = self.backend.attach_state()
        self.tracker.begin_wait(time.monotonic(), self.backend.base_url)
        return await self._follow(state, plan_for_endpoint(self.config))


async def _uncancelled(coro: Awaitable[ServerState]) -> ServerState:
    """Run ``coro`` to its end even when the caller is cancelled meanwhile (then re-raise): a spawn
    cut off between fork and server.json would leave a server nobody recorded, and so nobody stops."""
    task = asyncio.ensure_future(coro)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait({task})
        raise


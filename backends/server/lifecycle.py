"""The stop steps of the server's lifecycle, the same for every driver (its flags say where they differ).

A restart first stops what the record names (``stop_for_restart``): only a server ddtune spawned and
can prove its own is signalled (abort in-flight work, SIGTERM, bounded wait, SIGKILL of its group);
a record that proves nothing is set aside, never acted on; a systemd unit is stopped by its manager.
``down`` (``stop_for_down``) does the same to a recorded server and says what it stopped. Both run
under the session's lifecycle lock, on the record the session read under it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from backends.core.errors import UsageError
from backends.core.phase import Phase
from backends.drivers.base import Driver
from backends.drivers.registry import alive, driver_of, driver_flags
from backends.knobs.config import ServerConfig
from backends.knobs.plan import knob_text
from backends.launch.ownership import NotOurs, describe_stop
from backends.record.state import ServerState
from backends.server.record import RecordFile

BEFORE_STOP_S = 10.0    # the most a before_stop hook may delay a restart

Note = Callable[[str], None]


class OtherConfigRuns(UsageError):
    """A lifecycle command for one config file met a live server of another config file in the same
    state dir. It is never stopped without asking: a typo in ``--config`` must not throw away a
    six-minute model load. ``replace=True`` is the asking (``--replace``, the console's dialog)."""

    def __init__(self, state: ServerState, config: ServerConfig) -> None:
        theirs = state.config_source or "another config"
        ours = f"--config {config.source} " if os.path.isfile(config.source) else ""
        super().__init__(
            f"pid {state.pid} ({state.backend}, {state.phase}) runs another config, {theirs}; "
            f"not stopping it for {config.source}",
            hint=f"`ddtune {ours}up --replace` stops it and starts this config's server "
                 f"(restart takes --replace too); `ddtune down` only stops it")
        self.state = state
        self.theirs = theirs


def refuse_other_config(state: ServerState | None, config: ServerConfig, replace: bool) -> None:
    """Raise OtherConfigRuns when ``state`` (the record as it stands, read under the lifecycle lock)
    is a live server ddtune started from another config file than ``config``'s, unless ``replace``.
    A record that does not say its config (written before ddtune kept it) is taken as this one's."""
    if replace or state is None or not state.phase.live or state.config_source is None:
        return
    if driver_flags(state.backend).attaches:
        return  # an endpoint is nobody's to stop
    if not started_from(state, config):
        raise OtherConfigRuns(state, config)


def started_from(state: ServerState, config: ServerConfig) -> bool:
    """``state``'s server was started from ``config``'s file (its path as recorded, or the same file by
    another spelling); False when the record does not say."""
    recorded = state.config_source
    if recorded is None:
        return False
    return recorded in (config.origin, config.source) or (
        os.path.isfile(recorded) and os.path.realpath(recorded) == config.origin)


async def stop_for_restart(old: ServerState | None, driver: Driver, record: RecordFile, note: Note,
                           before_stop: list[Callable[[], Awaitable[None]]]) -> tuple[set[int], set[int]]:
    """Stop the recorded server before a new launch; clear its record. Returns (the pids that may
    still hold its port, the pids whose GPU memory the launch waits for)."""
    stopped: set[int] = set()
    gpu: set[int] = set()
    if old is not None and driver_flags(old.backend).spawns and old.pid is not None:
        stopper = driver_of(old, driver)
        if alive(old):
            for hook in before_stop:  # the console pauses its load: requests are cancelled, not failed
                try:
                    await asyncio.wait_for(hook(), BEFORE_STOP_S)
                except TimeoutError:
                    note(f"a pre-stop step took over {BEFORE_STOP_S:.0f} s; stopping anyway")
            note(f"stopping old server pid {old.pid} (SIGTERM, then SIGKILL after "
                 f"{driver.config.stop_timeout_s:.0f} s)")
        try:
            report = await stopper.stop(old)
        except NotOurs as exc:
            note(f"{exc.message}; {record.quarantine('refused')}")
            return stopped, gpu
        stopped = set(report.stopped) | {old.pid}
        if stopper.OWNS_GPU_MEMORY:  # what they hold is freed only as they exit
            gpu = stopped
        note(describe_stop(old.pid, report))
    elif driver.STOPS_BY_UNIT:  # the unit is stopped whatever the record says
        await driver.stop(old)
    else:
        note("no server of ours is running: nothing to stop")
    if old is not None:
        record.clear()
    return stopped, gpu


async def stop_for_down(state: ServerState | None, driver: Driver, record: RecordFile) -> ServerState | None:
    """Stop the recorded server (or what its dead leader left running) and clear its record; the
    returned state's ``reason`` says what was stopped. None when nothing was recorded. Raises NotOurs
    (the record set aside) when the record proves nothing, UsageError for a server ddtune attached to."""
    if driver_flags(state.backend).attaches if state is not None else driver.ATTACHES:
        url = state.url if state is not None else driver.config.base_url
        raise UsageError(f"cannot stop an endpoint server: ddtune only attaches to {url}, it did not start it",
                         hint="stop it where it runs; `ddtune down` stops servers ddtune started "
                              "(backend sglang, sim or systemd)")
    if state is None:
        return None
    if not driver.CAN_STOP:
        await driver.stop(state)  # raises: cannot stop
    if driver_flags(state.backend).stops_by_unit:
        await driver.stop(state)
        summary = f"stopped unit {state.unit or driver.config.unit}"
    else:
        try:
            report = await driver_of(state, driver).stop(state)
        except NotOurs as exc:
            raise NotOurs(exc.message, hint=f"{record.quarantine('refused')}; {exc.hint}") from None
        summary = describe_stop(state.pid, report)
        if state.phase == Phase.FAILED and not report.leader_alive:
            why = (state.reason or "no reason recorded").splitlines()[0][:120]
            summary += f" (its start had failed: {why})"
    record.clear()
    return state.with_(phase=Phase.STOPPED, reason=summary)


def running_knobs(config: ServerConfig, state: ServerState) -> tuple[ServerConfig, str] | None:
    """The config with the knobs a live server of it runs, and the note that says how they differ
    from the file; None when it differs in more than knobs (model, flags, env: the file wins)."""
    running = config.with_knobs(dict(state.knobs))
    if running.config_hash() != state.config_hash:
        return None
    file_knobs = config.knobs
    diff = ", ".join(f"{k}={knob_text(v)} (the file says {knob_text(file_knobs.get(k))})"
                     for k, v in state.knobs.items() if file_knobs.get(k) != v)
    return running, (f"it runs {diff}, kept; apply the config file with "
                     f"`ddtune up --apply-config` (or `a` in the console)")


async def uncancelled(coro: Awaitable[ServerState]) -> ServerState:
    """Run ``coro`` to its end even when the caller is cancelled meanwhile (then re-raise): a spawn
    cut off between fork and server.json would leave a server nobody recorded, and so nobody stops."""
    task = asyncio.ensure_future(coro)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait({task})
        raise

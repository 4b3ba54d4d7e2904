"""Follow one start until it is ready, has failed, or ran out of time: the pid we started must own the
socket and generate a token before it counts as ready (backends.launch.readiness).

The server's own log speaks first: the wait probes only once the log named our pid in ``Started
server process [PID]`` (a server with a log), a fatal line fails the start after FATAL_GRACE_S (time
for the lines that explain it), an exit fails it at once, and an attach where nothing answers fails
after its driver's connect grace. What the wait found is an ``Outcome``; recording it (verification,
server.json, the startup history) is the session's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from backends.drivers.base import Driver
from backends.launch.process import tree_pids
from backends.launch.readiness import ReadinessProbe
from backends.record.state import ServerState
from backends.server.logfollow import LogFacts, LogFollower
from backends.server.phases import Phases
from backends.core.phase import Phase

FATAL_GRACE_S = 2.0     # after a fatal line, wait this long (or for the exit) for the lines that explain it


@dataclass(frozen=True)
class Outcome:
    failure: str | None          # why the start failed; None: ready
    probes: int                  # 1-token generations the readiness probe sent
    ok_at: float | None = None   # monotonic: the probe's generation came back (detection ends)


async def until_ready(driver: Driver, state: ServerState, facts: LogFacts, log: LogFollower, phases: Phases,
                      timeout_s: float) -> Outcome:
    deadline = time.monotonic() + timeout_s
    attached = driver.ATTACHES
    grace = driver.connect_grace()  # an attach where nobody listens fails fast
    failure: str | None = None
    last: str | None = None  # the latest probe's reason: what a start that ran out of time was waiting for
    async with ReadinessProbe(state.url, state.port, state.pid, api_key=driver.api_key(state),
                              check_owner=not attached, dialect=driver.DIALECT) as probe:
        while True:
            phases.report(state.pid, probing=True)
            if not await driver.is_running(state):
                await log.settle()  # let the reader take the last lines of the log
                code = await driver.exit_code(state)
                why = facts.fatal_reason() if facts.fatals else "no fatal line in the log"
                exited = "the server exited" + ("" if code is None else f" with code {code}")
                failure = f"{exited} before it was ready; {why}"
                break
            if facts.fatal_at is not None and time.monotonic() - facts.fatal_at > FATAL_GRACE_S:
                failure = facts.fatal_reason()  # the first fatal line plus what followed it
                break
            if time.monotonic() >= deadline:
                failure = (f"not ready after {timeout_s:.0f} s (ready_timeout_s) in phase {phases.tracker.phase}"
                           + (f"; last probe: {last}" if last else ""))
                break
            # with a log, probe only once it named our pid in "Started server process [PID]"
            pid_ok = attached or not driver.has_logs() or not driver.LOG_NAMES_PID or facts.started_pid is not None
            if facts.started_pid is not None and state.pid and facts.started_pid not in tree_pids(state.pid):
                pid_ok = False
            if not pid_ok:
                await asyncio.sleep(0.1)
                continue
            result = await probe.probe()
            last = result.reason
            if result.ready:
                return Outcome(None, probe.generations, time.monotonic())
            if grace is not None:
                detail, failure = grace.check(result, time.monotonic())
                if detail and phases.tracker.phase == Phase.WAITING:  # "connection refused at URL"
                    phases.waiting(detail, force=True)
                if failure is not None:
                    break
    return Outcome(failure, probe.generations)

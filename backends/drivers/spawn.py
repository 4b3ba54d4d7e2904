"""The sglang and sim backends: one spawn path, only the command differs.

``sglang`` runs ``PYTHON -m sglang.launch_server ...`` with the configured interpreter; ``sim``
runs ddtune's simulator (``python -m backends.sim ...``). Both start in a new session (own process
group) with stdout and stderr appended to a log file under the state dir, which ddtune follows.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import httpx

from backends.core.answers import ERROR_BYTES, fetch_once
from backends.drivers.base import Driver, tail_file
from backends.knobs.plan import LaunchPlan
from backends.core.paths import logs_dir
from backends.launch.ownership import (StopReport, carries_token, crash_point, new_token, owned, server_env_of_launch,
                                       stop_owned)
from backends.launch.process import create_time, is_running, open_log, reap, spawn
from backends.knobs.serverhelp import ServerHelp, fetch_help, installed_version
from backends.record.state import ServerState


class ProcessDriver(Driver):
    """A server that is a local process ddtune spawns itself."""

    SPAWNS = True
    OWNS_GPU_MEMORY = True

    def __init__(self, config) -> None:
        super().__init__(config)
        self._children: dict[int, object] = {}  # pid -> Popen, for exit codes while we are the parent

    def learn_help(self) -> ServerHelp:
        env = self.server_env()
        version = self.version(env)
        return fetch_help(self.command_prefix(), env, version)

    def version(self, env: dict[str, str]) -> str | None:
        return installed_version(self.config.python, env)

    async def start(self, plan: LaunchPlan, record: Callable[[ServerState], object] | None = None) -> ServerState:
        """Launch; ``record`` is given the launch's state (token, argv, log; no pid) before the spawn
        and may refuse it by raising (backends.server.launchrec: a launch is recorded before it exists)."""
        token = new_token()
        env = server_env_of_launch(self.server_env(plan), token)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(100):
            # one fresh file per launch: two restarts in one second must not share (and append to)
            # a log, or the new start would be judged by the old server's lines
            log_path = logs_dir() / f"server-{stamp}-{os.getpid()}{f'-{n}' if n else ''}.log"
            try:
                log_fd = open_log(log_path)
                break
            except FileExistsError:
                continue  # a full disk or read-only dir: StateWriteError naming the log file
        else:
            raise FileExistsError(f"no free log file name under {logs_dir()}")
        intent = self.launch_state(plan, log_path=str(log_path), token=token)
        try:
            if record is not None:
                record(intent)
            crash_point("after-intent")
        except BaseException:
            os.close(log_fd)
            log_path.unlink(missing_ok=True)
            raise
        proc = await asyncio.to_thread(spawn, plan.argv, env, log_path, None, log_fd)
        self._children[proc.pid] = proc
        crash_point("after-spawn")
        latest = logs_dir() / "server.log"
        try:
            latest.unlink(missing_ok=True)
            latest.symlink_to(log_path.name)
        except OSError:
            pass
        return intent.with_(pid=proc.pid, pgid=proc.pid, create_time=create_time(proc.pid))

    async def abort_in_flight(self, state: ServerState) -> None:
        """POST /abort_request {abort_all}: SIGTERM alone would drain in-flight work with no timeout."""
        try:
            async with asyncio.timeout(2.0):  # a stop waits no longer for it, whatever DDTUNE_IDLE_S says
                await fetch_once(f"{state.url}/abort_request", "POST", api_key=self.api_key(state),
                                 json={"abort_all": True}, idle=2.0, limit=ERROR_BYTES)
        except (httpx.HTTPError, TimeoutError):
            pass

    async def stop(self, state: ServerState | None) -> StopReport:
        """Stop what the record proves ddtune started: the live group, or the survivors of a leader
        that died (OOM killer) still holding the GPU. Raises NotOurs, signalling nothing, otherwise."""
        if state is None or state.pid is None:
            return StopReport(True, (), ())
        found = await asyncio.to_thread(owned, state.pid, state.pgid, state.create_time,  # type: ignore[arg-type]
                                        state.token)
        if found.leader_alive:
            await self.abort_in_flight(state)
        report = await asyncio.to_thread(stop_owned, found, self.config.stop_timeout_s)
        if state.pid in self._children:
            reap(state.pid)
        return report

    async def is_running(self, state: ServerState) -> bool:
        proc = self._children.get(state.pid or -1)
        if proc is not None:
            return proc.poll() is None  # type: ignore[attr-defined]
        return is_running(state.pid, state.create_time) and state.pid is not None \
            and carries_token(state.pid, state.token)

    async def exit_code(self, state: ServerState) -> int | None:
        proc = self._children.get(state.pid or -1)
        return proc.poll() if proc is not None else None  # type: ignore[attr-defined]

    def log_lines(self, state: ServerState | None, from_start: bool = True) -> AsyncIterator[str]:
        if state is None or not state.log_path:
            raise ValueError("no server log: nothing was started")
        return tail_file(Path(state.log_path), from_start)


class SGLangDriver(ProcessDriver):
    NAME = "sglang"

    def command_prefix(self) -> tuple[str, ...]:
        return (self.config.python, "-m", "sglang.launch_server")


class SimDriver(ProcessDriver):
    """The simulator through exactly the sglang spawn path; only the command differs."""

    NAME = "sim"
    SIMULATED = True

    def command_prefix(self) -> tuple[str, ...]:
        # ddtune's own interpreter imports ddtune as this process did: from its sys.path, with the
        # PYTHONPATH it inherits (server_env). ``-P`` (3.11+) keeps ``-m`` from putting the working
        # directory first, where a user's ./backends folder would run instead of the simulator.
        return (sys.executable, "-P", "-m", "backends.sim")

    def runs_ddtune(self) -> bool:
        return True  # the simulator is ddtune: it keeps the PYTHONPATH a real server does not get

    def version(self, env: dict[str, str]) -> str | None:
        return None  # the simulator's --help is cheap: read it fresh, never cache it

    def learn_help(self) -> ServerHelp:
        # the simulator imitates the release named by --sim-version: ask that one for its flags,
        # and say which release it is (a knob's since/until is checked against it)
        from backends.sim.flags import imitated_version

        args = self.config.extra_args
        pick = tuple(a for i, a in enumerate(args) if a.startswith("--sim-version")
                     or (i > 0 and args[i - 1] == "--sim-version"))
        return replace(fetch_help(self.command_prefix() + pick, self.server_env(), None),
                       version=imitated_version(args))

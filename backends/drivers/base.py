"""The one backend contract: async start/stop/status/log_lines plus capability flags callers read.

Backends only do I/O for one kind of server (a process, a systemd unit, a URL). The safe restart
sequence (stop, wait for port and GPU, launch, track, probe, verify) is the server's owner's
(``backends.server.ServerSession``) and the same for all of them: where a driver differs, the owner
reads a flag below (``backends.drivers.registry.driver_flags`` gives them by name), never the class.
"""

from __future__ import annotations

import asyncio
import os
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import ClassVar

from backends.core.apikey import api_key, launched_key
from backends.knobs.config import ServerConfig
from backends.knobs.plan import LaunchPlan
from backends.launch.dialect import SGLANG, Dialect
from backends.launch.ownership import StopReport
from backends.knobs.serverhelp import ServerHelp
from backends.record.state import ServerState


class Driver(ABC):
    NAME: ClassVar[str]
    CAN_START: ClassVar[bool] = True
    CAN_STOP: ClassVar[bool] = True
    HAS_LOGS: ClassVar[bool] = True       # a log to follow (endpoint: only with [server] log_file: has_logs())
    # ddtune spawns the server itself, in its own process group, carrying a launch token: proved
    # ours by pid + create time + token, stopped by signalling that group, run on a lane's GPUs
    SPAWNS: ClassVar[bool] = False
    # stopped through its service manager (systemctl stop), never by signals; its main pid was
    # started by that manager, so it carries no launch token
    STOPS_BY_UNIT: ClassVar[bool] = False
    # someone else runs it and ddtune attaches by URL: no start of its own to time, no pid to prove
    # the socket's, nothing listening fails after connect_grace_s (``connect_grace``)
    ATTACHES: ClassVar[bool] = False
    # the GPU memory its processes hold is freed only when they exit: a restart waits for it
    OWNS_GPU_MEMORY: ClassVar[bool] = False
    # ddtune's SGLang simulator: reads no weights, holds no GPU memory unless told to
    SIMULATED: ClassVar[bool] = False
    # its log names the server's pid (SGLang's "Started server process [PID]"): readiness probes only
    # once it did; without such a line the port's owner alone proves the pid (llama-server)
    LOG_NAMES_PID: ClassVar[bool] = True
    # how it is asked for a generation and for an account of itself (backends.launch.dialect)
    DIALECT: ClassVar[Dialect] = SGLANG

    def __init__(self, config: ServerConfig) -> None:
        self.config = config

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def has_logs(self) -> bool:
        return self.HAS_LOGS

    def launch_state(self, plan: LaunchPlan, **fields) -> ServerState:
        """The record of launching ``plan`` with this driver's config: no pid until ``fields`` give one."""
        return ServerState(backend=self.NAME, pid=None, pgid=None, host=self.config.host, port=self.config.port,
                           url=self.base_url, config_hash=self.config.config_hash(), knobs=dict(self.config.knobs),
                           log_path=None, started_at=time.time(), argv=tuple(plan.argv),
                           config_source=self.config.origin).with_(**fields)

    def api_key(self, state: ServerState | None = None) -> str | None:
        """The key every request to this server carries: the ``--api-key`` ddtune launched it with
        (in its argv as launched: right after a launch, or read back with the 0600 launch record),
        else $DDTUNE_API_KEY. A redacted argv (no launch record of it) knows no key."""
        return (launched_key(state.argv) if state is not None else None) or api_key()

    def attach_state(self) -> ServerState:
        """The record of the server this driver attaches to (``ATTACHES`` drivers only)."""
        raise NotImplementedError(f"the {self.NAME} backend starts its server; it attaches to none")

    def connect_grace(self):
        """How long nothing answering may last before an attach fails (``ATTACHES``); None: no limit
        but ready_timeout_s (a started server's own pid is followed instead)."""
        return None

    def command_prefix(self) -> tuple[str, ...]:
        """argv before the SGLang flags, e.g. ``python -m sglang.launch_server``."""
        raise NotImplementedError

    def runs_ddtune(self) -> bool:
        """The server is ddtune's own code run by ddtune's interpreter (the simulator, the llama.cpp
        extra's launcher): it is found as ddtune was, PYTHONPATH included."""
        return False

    def server_env(self, plan: LaunchPlan | None = None) -> dict[str, str]:
        """ddtune's environment less its PYTHONPATH (how ddtune itself was found: a server's own
        interpreter gets one from ``[server] env`` only, unless it ``runs_ddtune``), plus the
        config's env and the plan's."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(self.config.env)
        if plan is not None:
            env.update(plan.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.runs_ddtune() and "PYTHONPATH" in os.environ:
            env.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
        return env

    def learn_help(self) -> ServerHelp:
        """The server's ``--help`` (blocking; call through a thread)."""
        raise NotImplementedError

    def installed_version(self) -> str | None:
        """The version of the server this config would launch, read without starting it (blocking)."""
        from backends.knobs.serverhelp import installed_version

        return installed_version(self.config.python, self.server_env())

    @abstractmethod
    async def start(self, plan: LaunchPlan, record: Callable[[ServerState], object] | None = None) -> ServerState:
        """Launch the server for ``plan``; returns its state (pid known, not yet ready). ``record``: called
        with the launch's state before a process ddtune spawns exists (backends.server.launchrec)."""

    @abstractmethod
    async def stop(self, state: ServerState | None) -> StopReport:
        """Stop the server of ``state``: abort in-flight work, SIGTERM, bounded wait, SIGKILL."""

    @abstractmethod
    async def is_running(self, state: ServerState) -> bool:
        """True while the server of ``state`` (that very process) is alive."""

    async def exit_code(self, state: ServerState) -> int | None:
        return None

    @abstractmethod
    def log_lines(self, state: ServerState | None, from_start: bool = True) -> AsyncIterator[str]:
        """The server's log, line by line (split on \\n and \\r), following new output forever."""

    async def status(self, state: ServerState | None) -> str:
        """``running`` or ``stopped`` for the recorded server."""
        if state is None:
            return "stopped"
        return "running" if await self.is_running(state) else "stopped"


TAIL_READ_BYTES = 1 << 20  # the most tail_file reads at once
WAKE_S = 2.0               # tail_file looks at the file at least this often, inotify or not


async def tail_file(path: Path, from_start: bool = True, poll: float = 0.1) -> AsyncIterator[str]:
    """Follow a log file like ``tail -F``: lines split on \\n and \\r; waits for the file to appear.

    Between writes it sleeps until the kernel says the file changed (inotify on its directory), so
    a quiet server costs no wake-ups; every ``WAKE_S`` it looks anyway, and where inotify is not
    available it looks every ``poll`` seconds."""
    from backends.logs.splitter import LineSplitter
    from backends.record.watch import DirWatch

    splitter = LineSplitter()
    offset = None
    with DirWatch(path.parent, {path.name}, fallback_s=poll) as watch:
        while True:
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                await watch.wait(WAKE_S)
                continue
            if offset is None:
                offset = 0 if from_start else size
            if size < offset:  # truncated or replaced: start over
                offset = 0
            if size > offset:
                # Bounded reads: re-attaching to a server with a huge log must not load it whole or
                # hold the event loop for the whole file.
                with path.open("rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(min(size - offset, TAIL_READ_BYTES))
                offset += len(chunk)
                for line in splitter.feed(chunk):
                    yield line
                await asyncio.sleep(0)
            else:
                await watch.wait(WAKE_S)

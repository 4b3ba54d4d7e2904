"""The endpoint backend: attach to a server someone else runs, by URL (optionally tailing its log).

It cannot start or stop anything; readiness is a 1-token generation at the URL and verification
uses ``/server_info`` plus the log file when one is configured.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import urlparse

from backends.drivers.base import Driver, tail_file
from backends.core.errors import ServerError
from backends.knobs.plan import LaunchPlan
from backends.launch.ownership import StopReport
from backends.record.state import ServerState


class EndpointDriver(Driver):
    NAME = "endpoint"
    CAN_START = False
    CAN_STOP = False
    HAS_LOGS = False
    ATTACHES = True

    def has_logs(self) -> bool:
        return bool(self.config.log_file)

    @property
    def port(self) -> int | None:
        parsed = urlparse(self.base_url)
        return parsed.port or (443 if parsed.scheme == "https" else 80)

    async def start(self, plan: LaunchPlan, record: Callable[[ServerState], object] | None = None) -> ServerState:
        raise ServerError(f"the endpoint backend attaches to {self.base_url}; it cannot start or restart a server",
                          hint="restart it where it runs, or use backend = \"sglang\" to let ddtune manage it")

    async def stop(self, state: ServerState | None) -> StopReport:
        raise ServerError(f"the endpoint backend attaches to {self.base_url}; it cannot stop a server",
                          hint="stop it where it runs, or use backend = \"sglang\" to let ddtune manage it")

    def attach_state(self) -> ServerState:
        return ServerState(
            backend=self.NAME, pid=None, pgid=None, host=urlparse(self.base_url).hostname or "",
            port=self.port or 0, url=self.base_url, config_hash=self.config.config_hash(),
            knobs=dict(self.config.knobs), log_path=self.config.log_file, started_at=time.time(),
            config_source=self.config.origin,
        )

    def connect_grace(self) -> ConnectGrace:
        return ConnectGrace(self)

    async def is_running(self, state: ServerState) -> bool:
        return True  # we cannot see the process; readiness probes tell whether it answers

    def log_written_within(self, seconds: float) -> bool:
        """Whether the configured log file changed in the last ``seconds`` (a server on its way)."""
        log_file = self.config.log_file
        if not log_file:
            return False
        try:
            return time.time() - os.stat(Path(log_file).expanduser()).st_mtime < seconds
        except OSError:
            return False

    def log_lines(self, state: ServerState | None, from_start: bool = True) -> AsyncIterator[str]:
        if not self.config.log_file:
            raise ValueError("the endpoint backend has no log: set [server] log_file to tail one")
        return tail_file(Path(self.config.log_file).expanduser(), from_start)


class ConnectGrace:
    """An endpoint where nothing answers fails after [server] connect_grace_s (30 s by default), not
    after ready_timeout_s: an hour of "waiting" for a wrong URL helps nobody. A configured log that
    is still being written means the server is on its way, so the wait goes on while it grows."""

    def __init__(self, backend: EndpointDriver) -> None:
        self.backend = backend
        self.since: float | None = None  # monotonic time of the first failed connect in this run of them

    def check(self, result, now: float) -> tuple[str | None, str | None]:
        """(new detail for the waiting phase or None, failure reason or None) after one probe."""
        if not result.unreachable:
            answered = self.since is not None
            self.since = None
            return (f"{self.backend.base_url} answers; not ready: {result.reason}" if answered else None), None
        detail = result.reason if self.since is None else None
        self.since = now if self.since is None else self.since
        grace = self.backend.config.connect_grace_s
        if now - self.since < grace or self.backend.log_written_within(grace):
            return detail, None
        return detail, (f"{result.reason}: nothing answered there for {grace:.0f} s ([server] connect_grace_s); "
                        "start the server there, or fix [server] url")


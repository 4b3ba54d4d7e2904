"""The endpoint backend: attach to a server someone else runs, by URL (optionally tailing its log).

It cannot start or stop anything; readiness is a 1-token generation at the URL and verification
uses ``/server_info`` plus the log file when one is configured.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlparse

from backends.backend import Backend, tail_file
from backends.errors import ServerError
from backends.knobs import LaunchPlan
from backends.process import StopReport
from backends.state import ServerState


class EndpointBackend(Backend):
    NAME = "endpoint"
    CAN_START = False
    CAN_STOP = False
    HAS_LOGS = False

    def has_logs(self) -> bool:
        return bool(self.config.log_file)

    @property
    def port(self) -> int | None:
        parsed = urlparse(self.base_url)
        return parsed.port or (443 if parsed.scheme == "https" else 80)

    async def start(self, plan: LaunchPlan) -> ServerState:
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
            config_source=self.config.source,
        )

    async def is_running(self, state: ServerState) -> bool:
        return True  # we cannot see the process; readiness probes tell whether it answers

    def log_lines(self, state: ServerState | None, from_start: bool = True) -> AsyncIterator[str]:
        if not self.config.log_file:
            raise ValueError("the endpoint backend has no log: set [server] log_file to tail one")
        return tail_file(Path(self.config.log_file).expanduser(), from_start)


def make_backend(config, **kw) -> Backend:
    """The backend the config names."""
    from backends.process_backend import SGLangBackend, SimBackend
    from backends.systemd_backend import SystemdBackend

    classes = {"sglang": SGLangBackend, "sim": SimBackend, "systemd": SystemdBackend, "endpoint": EndpointBackend}
    return classes[config.backend](config, **kw)

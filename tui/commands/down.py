"""ddtune down: stop the server ddtune started (its whole process group)."""

from __future__ import annotations

HELP = "stop the server ddtune started"
EXAMPLES = """\
examples:
  ddtune down
  ddtune --config box.toml down

Aborts in-flight requests, sends SIGTERM to the server's process group, and SIGKILLs what is left
after [server] stop_timeout_s. The endpoint backend cannot stop a server.
"""


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    import asyncio

    from tui.commands._server import err, load_config, manager

    stopped = asyncio.run(manager(load_config(args)).down())
    if stopped is None:
        err("no server recorded: nothing to stop")
    else:
        err(f"stopped pid {stopped.pid} ({stopped.backend})")
    return 0

"""ddtune down: stop the server ddtune started (its whole process group)."""

from __future__ import annotations

HELP = "stop the server ddtune started"
EXAMPLES = """\
examples:
  ddtune down
  ddtune --config box.toml down

Aborts in-flight requests, sends SIGTERM to the server's process group, and SIGKILLs what is left
after [server] stop_timeout_s. When the server's leader died outside ddtune (the OOM killer), the
processes it left behind (schedulers holding GPU memory) are found and stopped. Only processes the
record proves ddtune started are signalled (pid + create time + the group it created); anything
else is refused, named, and left alone (exit 1). An endpoint server is not ddtune's to stop: ddtune
only attaches to it, and `down` says so (exit 2). A server whose start failed had already exited:
`down` says that, and stops only what it left running. The servers of a parallel sweep's lanes
(recorded under the state dir's lanes/) are stopped too, each proved ours the same way.
"""


def add_arguments(parser) -> None:
    from tui.commands._server import add_wait_argument

    add_wait_argument(parser)


def run(args) -> int:
    from tui.commands._server import err, load_config, run_command

    outcome = run_command(load_config(args), args, "down")
    stopped, lanes = outcome.state, outcome.lanes
    if stopped is None and not lanes:
        err("no server recorded: nothing to stop")
    elif stopped is not None:
        err(f"{stopped.reason} ({stopped.backend})")
    for _, line in lanes:
        err(line)
    return 0 if all(ok for ok, _ in lanes) else 1

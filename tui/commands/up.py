"""ddtune up: start (or restart) the configured server and return once it is ready."""

from __future__ import annotations

HELP = "start or restart the configured server and return once it is ready"
EXAMPLES = """\
examples:
  ddtune up                                   start the configured server (the simulator when none is configured)
  ddtune up --preset b8-t4-w2048              start with a shipped knob preset
  ddtune up --set window=1024 --set topk=4    change knobs (restarts the server if they differ)
  ddtune --config box.toml up

Prints each startup phase to stderr; exit 0 once the server we started generates a token,
exit 1 with the reason (fatal log line, log tail) when the start failed.
A server already running this exact config (file knobs + --preset + --set) is re-attached, not
restarted; one running other knobs is restarted with these.
"""


def add_arguments(parser) -> None:
    from tui.commands._server import add_knob_arguments, add_wait_argument

    add_knob_arguments(parser)
    add_wait_argument(parser)


def run(args) -> int:
    from tui.commands._server import drive, report_final, requested_config

    config = requested_config(args)
    return report_final(drive(config, args, "up"))

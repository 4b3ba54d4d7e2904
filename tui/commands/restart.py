"""ddtune restart: restart the configured server with new knobs, race-free"""

from __future__ import annotations

HELP = "restart the configured server with new knobs, race-free"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("restart", "lifecycle")

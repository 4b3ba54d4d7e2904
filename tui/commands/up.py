"""ddtune up: start or restart the configured server and return once it is ready"""

from __future__ import annotations

HELP = "start or restart the configured server and return once it is ready"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("up", "lifecycle")

"""ddtune down: stop the configured server (SIGTERM, then SIGKILL of its process group)"""

from __future__ import annotations

HELP = "stop the configured server (SIGTERM, then SIGKILL of its process group)"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("down", "lifecycle")

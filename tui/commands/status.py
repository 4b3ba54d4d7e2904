"""ddtune status: show the server's phase, pid, knobs and verification"""

from __future__ import annotations

HELP = "show the server's phase, pid, knobs and verification"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("status", "lifecycle")

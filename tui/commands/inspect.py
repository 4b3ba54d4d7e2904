"""ddtune inspect: summarise a server log: phases, timings, draft settings, decode stats, fatal error"""

from __future__ import annotations

HELP = "summarise a server log: phases, timings, draft settings, decode stats, fatal error"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("inspect", "lifecycle")

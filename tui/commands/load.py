"""ddtune load: keep coding prompts in flight and print windowed tok/s and acceptance"""

from __future__ import annotations

HELP = "keep coding prompts in flight and print windowed tok/s and acceptance"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("load", "workloads")

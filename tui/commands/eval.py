"""ddtune eval: run or regrade the coding eval"""

from __future__ import annotations

HELP = "run or regrade the coding eval"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("eval", "workloads")

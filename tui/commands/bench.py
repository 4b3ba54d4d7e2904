"""ddtune bench: run the benchmark matrix (contexts x concurrency) against a server"""

from __future__ import annotations

HELP = "run the benchmark matrix (contexts x concurrency) against a server"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("bench", "workloads")

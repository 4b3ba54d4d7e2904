"""ddtune sweep: benchmark several knob presets, restarting only when knobs change"""

from __future__ import annotations

HELP = "benchmark several knob presets, restarting only when knobs change"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("sweep", "sweeps")

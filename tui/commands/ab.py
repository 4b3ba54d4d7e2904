"""ddtune ab: quick A/B of two knob presets, interleaved"""

from __future__ import annotations

HELP = "quick A/B of two knob presets, interleaved"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("ab", "sweeps")

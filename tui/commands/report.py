"""ddtune report: compare runs side by side with ratios and confidence intervals"""

from __future__ import annotations

HELP = "compare runs side by side with ratios and confidence intervals"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("report", "sweeps")

"""``ddtune`` with no command: open the console."""

from __future__ import annotations


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("(console)", "console")

"""ddtune sim: run the SGLang simulator server in the foreground (SGLang-style flags)."""

from __future__ import annotations

HELP = "run the built-in SGLang simulator server (SGLang's flags, plus --sim-*)"
PASSTHROUGH = True


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("sim", "foundation")

"""ddtune doctor: check the config, the interpreter, SGLang's flags, the port and the GPU"""

from __future__ import annotations

HELP = "check the config, the interpreter, SGLang's flags, the port and the GPU"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("doctor", "lifecycle")

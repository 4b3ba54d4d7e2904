"""ddtune gpu: show GPU memory, utilisation and the server's share (like nvidia-smi)"""

from __future__ import annotations

HELP = "show GPU memory, utilisation and the server's share (like nvidia-smi)"
EXAMPLES = None


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from tui.commands._pending import not_yet

    return not_yet("gpu", "telemetry")

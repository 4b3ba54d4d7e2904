"""The SGLang simulator (``ddtune sim``, ``python -m backends.sim``): see runner.py for behaviour."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the simulator with SGLang-style argv; returns the process exit code."""
    from backends.sim.runner import main as run_main

    return run_main(argv)

"""What an interrupted bench or eval says on its way out: the command that continues its run, as a
sweep and a search say theirs."""

from __future__ import annotations

import sys


def say_interrupted(kind: str) -> int:
    """One line on stderr: how to continue the run this ``ddtune KIND`` was writing; 130 (Ctrl-C)."""
    from workloads.report import our_run

    path = our_run(kind)
    sys.stderr.write(f"{kind} interrupted; continue it with: ddtune {kind} --resume {path}\n" if path else
                     f"{kind} interrupted before its run was created; nothing to resume\n")
    return 130

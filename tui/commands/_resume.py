"""What an interrupted bench or eval says on its way out: the command that continues its run, as a
sweep and a search say theirs."""

from __future__ import annotations

import os
import sys


def our_run(kind: str) -> str | None:
    """The newest ``runs/*-KIND`` run whose last attempt is this process (None: it had not begun)."""
    from backends.core import DdtuneError, runs_dir
    from workloads.report import home_short, read_run_file

    try:
        found = sorted(p for p in runs_dir().glob(f"*-{kind}") if (p / "run.json").is_file())
        attempts = read_run_file(found[-1] / "run.json").get("attempts") if found else None
    except (DdtuneError, OSError):
        return None
    last = attempts[-1] if isinstance(attempts, list) and attempts else None
    return home_short(str(found[-1])) if isinstance(last, dict) and last.get("pid") == os.getpid() else None


def say_interrupted(kind: str) -> int:
    """One line on stderr: how to continue the run this ``ddtune KIND`` was writing; 130 (Ctrl-C)."""
    path = our_run(kind)
    sys.stderr.write(f"{kind} interrupted; continue it with: ddtune {kind} --resume {path}\n" if path else
                     f"{kind} interrupted before its run was created; nothing to resume\n")
    return 130

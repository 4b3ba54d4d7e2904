"""``ddtune report`` as one call, and the run an interrupted bench or eval continues.

``report(runs, fmt, out=...)``: the text ``ddtune report`` prints (or writes to ``out``, checked
before any run is read), a knob search folder standing for its rounds (each a sweep folder) and
bringing its summary along (its lines: search_summary.py, the same ``ddtune search`` prints).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from backends.core import DdtuneError, UsageError
from backends.core import runs_dir
from backends.core import check_output, write_atomic
from workloads.report.inputs import read_run_file
from workloads.report.search_summary import search_rounds, summary_lines
from workloads.report.text import report_text
from workloads.runs.attempts import status_of
from workloads.runs.store import home_short

@dataclass(frozen=True)
class SearchFound:
    """A knob search folder among the runs: its summary (once done) or its status and how to go on."""

    path: str
    lines: tuple[str, ...]
    summary: dict | None = None
    status: str | None = None

    def to_json(self) -> dict:
        return {"path": self.path, "summary": self.summary} if self.summary is not None else \
            {"path": self.path, "status": self.status}


def expand_searches(runs: list[str]) -> tuple[list[str], list[SearchFound]]:
    """A knob search folder stands for its rounds (each a sweep folder, reported together) and brings
    its summary (what ``ddtune search`` printed at the end) with it."""
    out: list[str] = []
    searches: list[SearchFound] = []
    for run in runs:
        path = Path(run).expanduser()
        if not (path / "search.json").is_file():
            out.append(run)
            continue
        rounds = [str(p) for p in search_rounds(path)]
        resume = f"ddtune search --resume --out {run}"
        if not rounds:
            raise UsageError(f"{run}: a knob search with no round measured yet", hint=f"continue it: {resume}")
        out += rounds
        if (path / "summary.json").is_file():
            summary = read_run_file(path / "summary.json")
            searches.append(SearchFound(run, tuple(summary_lines(summary)), summary=summary))
        else:
            status = status_of(read_run_file(path / "search.json"))
            searches.append(SearchFound(run, (f"{status}: continue it with `{resume}`",), status=status))
    return out, searches


def report(runs: list[str], fmt: str = "md", *, out: str | None = None) -> str:
    """The report of ``runs`` in ``fmt`` (md, csv, json); written to ``out`` too when given."""
    if out:
        check_output(out)  # refused before the runs are read
    runs, searches = expand_searches(runs)
    text = report_text(runs, fmt)
    if searches and fmt == "json":
        text = json.dumps({**json.loads(text), "searches": [s.to_json() for s in searches]}, indent=2) + "\n"
    elif searches and fmt == "md":
        text = "".join(f"# knob search {s.path}\n\n" + "\n".join(f"    {line}" for line in s.lines) + "\n\n"
                       for s in searches) + text
    if out:
        write_atomic(out, text)
    return text


def our_run(kind: str) -> str | None:
    """The newest ``runs/*-KIND`` run whose last attempt is this process, as a human pastes it
    (None: it had not begun): what an interrupted bench or eval says to continue."""
    try:
        found = sorted(p for p in runs_dir().glob(f"*-{kind}") if (p / "run.json").is_file())
        attempts = read_run_file(found[-1] / "run.json").get("attempts") if found else None
    except (DdtuneError, OSError):
        return None
    last = attempts[-1] if isinstance(attempts, list) and attempts else None
    return home_short(str(found[-1])) if isinstance(last, dict) and last.get("pid") == os.getpid() else None

"""Past runs for the console's results screen: list them (one row each, a sweep or a search as one),
compare two on what they share, open one (its report). Pure over files; the screen calls these from a
worker thread."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from backends.core import DdtuneError
from backends.core import runs_dir
from backends.core import escaped
from workloads.runs.cellkey import CellKey
from workloads.report.inputs import read_cells, read_run_file
from workloads.report.load_runs import LoadRun, compare_loads, read_load_run
from workloads.report.search_summary import search_rounds, summary_lines
from workloads.report.text import report_text
from workloads.runs.attempts import status_of
from workloads.stats.metrics import cell_acceptance


@dataclass(frozen=True)
class RunRow:
    path: Path
    id: str
    kind: str
    status: str
    knobs: str
    cells: tuple[dict, ...]
    summary: str
    load: LoadRun | None = None  # a load run's summary and windows (what two load runs compare on)
    compare_head: ClassVar = ("cell", "tok/s A", "tok/s B", "B/A", "accept A", "accept B")  # two bench runs'

    def compare(self, other: RunRow) -> RunComparison:
        """This run (A) and ``other`` (B) on what they share (compare_runs)."""
        return compare_runs(self, other)

    def text(self) -> str:
        """What Enter on this run shows (plain text; call it from a thread): ``ddtune report``'s
        markdown for a sweep, bench, eval or load run; a search's summary and the report command of
        each round. A run that cannot be reported says why."""
        return run_text(self)


def _knobs(run: dict) -> str:
    server = run.get("server")
    knobs = server.get("knobs") if isinstance(server, dict) else None
    if not isinstance(knobs, dict):
        return "-"
    return " ".join(f"{k}={v}" for k, v in knobs.items() if v is not None) or "-"  # an unset knob: not "budget=None"


def _summary(run: dict, cells: list[dict], status: str, load: LoadRun | None = None) -> str:
    if run.get("kind") == "bench" and cells:
        best = max(cells, key=lambda c: c.get("output_tok_s") or 0)
        shared = sum(1 for c in cells if c.get("contended") is True)
        return (f"{len(cells)} cells, best {best.get('output_tok_s') or 0:.0f} tok/s ({CellKey.of(best).label()})"
                + (f", {shared} CONTENDED" if shared else ""))
    summary = run.get("summary")
    if not isinstance(summary, dict):
        return status
    if load is not None and "finished" in load.summary:  # its numbers checked (report.read_load_run)
        finished, rate = load.number("finished"), load.number("output_tok_s")
        where = " (console)" if run.get("source") == "console" else ""
        plan = run.get("plan") if isinstance(run.get("plan"), dict) else {}
        prompts = plan.get("prompts") if isinstance(plan, dict) else None
        of = f" of {escaped(prompts)}" if isinstance(prompts, str) and prompts != "coding" else ""
        graded = sum(load.verdicts.values())
        passed = f", {load.verdicts.get('pass', 0)}/{graded} pass" if graded or not of else ""
        return f"{'-' if finished is None else f'{finished:.0f}'} requests{of}, {rate or 0:.0f} tok/s{passed}{where}"
    if "pass" in summary:
        total = sum(v for v in summary.values() if isinstance(v, int))
        return f"{summary['pass']}/{total} pass"
    return status


def _sweep_row(path: Path) -> RunRow:
    doc = read_run_file(path / "sweep.json")
    plan = doc.get("plan")
    configs = plan.get("configs") if isinstance(plan, dict) else None
    if not isinstance(configs, list):
        configs = []
    names = [str(c.get("name")) for c in configs if isinstance(c, dict)]
    done, failed = doc.get("slots_done"), doc.get("slots_failed")
    counts = f"{done} done, {failed} failed" if isinstance(done, int) and isinstance(failed, int) else "in progress"
    summary = f"{len(names)} configs: {', '.join(names)[:60]}; {counts}; Enter: its report"
    return RunRow(path, str(doc.get("id", path.name)), str(doc.get("kind", "sweep")), str(doc.get("status", "?")),
                  "-", (), summary)


def _search_row(path: Path) -> RunRow:
    """A knob search (`ddtune search`, or the console's S): its best and restarts once done, else how to
    resume it; each round is a sweep folder `ddtune report` reads."""
    doc = read_run_file(path / "search.json")
    status = status_of(doc)
    summary = read_run_file(path / "summary.json") if (path / "summary.json").is_file() else {}
    best, restarts = summary.get("best"), summary.get("restarts")
    if isinstance(best, dict) and isinstance(restarts, dict):
        tok = best.get("tok_s")
        mean = tok.get("mean") if isinstance(tok, dict) else None
        mean = mean if isinstance(mean, (int, float)) else 0
        text = (f"best {best.get('label')}: {mean:.0f} tok/s; {restarts.get('used')} restarts of a "
                f"full grid's {restarts.get('grid')}; Enter: its summary")
    elif status in ("interrupted", "failed"):
        text = f"{status}: continue it with `ddtune search --resume --out {path}`"
    else:
        text = status
    return RunRow(path, str(doc.get("id", path.name)), "search", status, "-", (), text)


def _run_row(path: Path) -> RunRow:
    run = read_run_file(path / "run.json")
    cells = list(read_cells(path / "cells.jsonl"))
    status = status_of(run)  # a run still marked running whose process is gone shows as interrupted
    load = read_load_run(path) if run.get("kind") == "load" else None
    why = load.summary.get("reason") if load is not None else None
    if status == "interrupted" and isinstance(why, str) and why:
        status = f"interrupted ({why})"  # a console load's share cut short by a restart or a stop
    return RunRow(path, str(run.get("id", path.name)), str(run.get("kind", "?")), status,
                  _knobs(run), tuple(cells), _summary(run, cells, status, load), load)


# what a folder under runs/ holds, by the file that marks it (a sweep or a search is one row)
_ROWS = (("search.json", _search_row), ("sweep.json", _sweep_row), ("run.json", _run_row))


def list_runs(limit: int = 200) -> list[RunRow]:
    """Runs, sweeps and searches under runs/, newest first (a sweep or a search is one row)."""
    rows = []
    for path in sorted(runs_dir().iterdir(), reverse=True)[:limit]:
        row = next((build for marker, build in _ROWS if (path / marker).is_file()), None)
        if row is None:
            continue
        try:
            rows.append(row(path))
        except DdtuneError:
            continue  # a folder whose files are corrupt is left out of the list
    return rows


def compare(a: RunRow, b: RunRow) -> list[tuple[str, str, str, str, str, str]]:
    """Per shared cell: (cell, tok/s A, tok/s B, ratio B/A, accept A, accept B)."""
    index = {CellKey.of(c): c for c in a.cells}  # prompts x context x concurrency x rate
    out = []
    for cell in b.cells:
        key = CellKey.of(cell)
        if key not in index:
            continue
        x, y = index[key].get("output_tok_s") or 0.0, cell.get("output_tok_s") or 0.0
        acc_a, acc_b = cell_acceptance(index[key]), cell_acceptance(cell)
        out.append((key.label(), f"{x:.0f}", f"{y:.0f}", f"{y / x:.2f}x" if x else "-",
                    "-" if acc_a is None else f"{acc_a:.2f}", "-" if acc_b is None else f"{acc_b:.2f}"))
    return out


@dataclass(frozen=True)
class RunComparison:
    """Two runs side by side: what they share, said in one line, and the table's head and rows."""

    shared: str
    head: tuple[str, ...]
    rows: list[tuple[str, ...]]


CELL_HEAD = RunRow.compare_head


def compare_runs(a: RunRow, b: RunRow) -> RunComparison:
    """Two runs of any kind, on what they share: load runs on their summaries (and median windows
    where both have windows), bench or eval runs on their shared cells; else say why nothing is shared."""
    if a.load is not None and b.load is not None:
        windows = " and median windows" if a.load.windows and b.load.windows else ""
        return RunComparison(f"two load runs: compared on their summaries{windows}", ("measure", "A", "B", "B/A"),
                          list(compare_loads(a.load, b.load)))
    if a.cells and b.cells:
        rows = compare(a, b)
        if rows:
            return RunComparison(f"{len(rows)} bench cell(s) in both runs", CELL_HEAD, list(rows))
        cells = lambda r: ", ".join(sorted({CellKey.of(c).label() for c in r.cells}))  # noqa: E731
        return RunComparison(f"no bench cell in both runs (A: {cells(a)}; B: {cells(b)})", CELL_HEAD, [])
    what = lambda r: ("a load run" if r.load is not None else f"a {r.kind} run with {len(r.cells)} cells" if r.cells  # noqa: E731
                      else f"a {r.kind}" if r.kind in ("sweep", "search") else f"a {r.kind} run with no cell")
    return RunComparison(f"nothing in common: A is {what(a)}, B is {what(b)}; load runs compare with load runs, "
                      "bench runs on their cells, and a sweep or search compares its own configurations "
                      "(Enter opens its report)", CELL_HEAD, [])


def run_text(row: RunRow) -> str:
    """RunRow.text: a search's summary and its rounds, else ``ddtune report``'s markdown of the run."""
    path = row.path
    if row.kind == "search":
        rounds = [p.name for p in search_rounds(path)]
        lines = [f"# knob search {row.id}: {row.status}", "", f"folder: {path}", ""]
        try:
            lines += summary_lines(read_run_file(path / "summary.json"))
        except (DdtuneError, KeyError, TypeError, AttributeError):  # no summary yet, or not one ddtune wrote
            lines.append(row.summary)
        if rounds:
            lines += ["", "rounds (each a sweep): " + ", ".join(rounds),
                      f"its rounds' full report: ddtune report {path}"]
        return "\n".join(lines)
    try:
        text = report_text([str(path)], "md")
    except DdtuneError as exc:
        text = f"{exc.message}" + (f"\n({exc.hint})" if exc.hint else "")
    return f"{text}\n\nthe same from a shell: ddtune report {path}"

"""Read past runs for the results screen and compare two of them per cell. Pure over files;
the screen calls these from a worker thread."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.errors import DdtuneError
from backends.paths import runs_dir
from workloads.report_input import read_cells, read_run_file
from workloads.run_attempts import status_of


@dataclass(frozen=True)
class RunRow:
    path: Path
    id: str
    kind: str
    status: str
    knobs: str
    cells: tuple[dict, ...]
    summary: str


def _knobs(run: dict) -> str:
    server = run.get("server")
    knobs = server.get("knobs") if isinstance(server, dict) else None
    if not isinstance(knobs, dict):
        return "-"
    return " ".join(f"{k}={v}" for k, v in knobs.items()) or "-"


def _summary(run: dict, cells: list[dict], status: str) -> str:
    if run.get("kind") == "bench" and cells:
        best = max(cells, key=lambda c: c.get("output_tok_s") or 0)
        return (f"{len(cells)} cells, best {best.get('output_tok_s') or 0:.0f} tok/s "
                f"(ctx {best['context']} c{best['concurrency']})")
    summary = run.get("summary")
    if isinstance(summary, dict) and "pass" in summary:
        total = sum(v for v in summary.values() if isinstance(v, int))
        return f"{summary['pass']}/{total} pass"
    return status


def list_runs(limit: int = 200) -> list[RunRow]:
    rows = []
    for path in sorted(runs_dir().iterdir(), reverse=True)[:limit]:
        try:
            run = read_run_file(path / "run.json")
            cells = list(read_cells(path / "cells.jsonl"))
        except DdtuneError:
            continue  # a run whose files are corrupt is left out of the list
        status = status_of(run)  # a run still marked running whose process is gone shows as interrupted
        rows.append(RunRow(path, str(run.get("id", path.name)), str(run.get("kind", "?")), status,
                           _knobs(run), tuple(cells), _summary(run, cells, status)))
    return rows


def compare(a: RunRow, b: RunRow) -> list[tuple[str, str, str, str, str, str]]:
    """Per shared cell: (cell, tok/s A, tok/s B, ratio B/A, accept A, accept B)."""
    index = {(c["context"], c["concurrency"]): c for c in a.cells}
    out = []
    for cell in b.cells:
        key = (cell["context"], cell["concurrency"])
        if key not in index:
            continue
        x, y = index[key].get("output_tok_s") or 0.0, cell.get("output_tok_s") or 0.0
        acc_a = (index[key].get("acceptance") or {}).get("mean")
        acc_b = (cell.get("acceptance") or {}).get("mean")
        out.append((f"ctx {key[0]} c{key[1]}", f"{x:.0f}", f"{y:.0f}", f"{y / x:.2f}x" if x else "-",
                    "-" if acc_a is None else f"{acc_a:.2f}", "-" if acc_b is None else f"{acc_b:.2f}"))
    return out

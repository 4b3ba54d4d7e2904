"""The results screen's door to past runs: listing and comparing them is workloads.report's
(workloads/report/past.py); opening one renders a search's summary with the search family's lines."""

from __future__ import annotations

from workloads.report import CELL_HEAD, RunRow, compare_runs, list_runs, run_text

__all__ = ["CELL_HEAD", "RunRow", "compare_runs", "list_runs", "open_text"]


def open_text(row: RunRow) -> str:
    """What Enter on a run shows (plain text; call it from a thread)."""
    from workloads.search import summary_lines  # the search family only when a run is opened

    return run_text(row, summary_lines)

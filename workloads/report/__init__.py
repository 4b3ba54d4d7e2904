"""``ddtune report``: read runs, sweeps and searches back, compare configurations with 95% intervals, and
render the result.

The face: ``report_text`` (what ``ddtune report`` prints), ``sweep_report`` and its renderings, and what
the console's results screen reads to list and compare past runs (run files, cells, load runs, a run's
status, a path shown without the user's home).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.report.inputs": ("read_cells", "read_run_file"),
    "workloads.report.load_runs": ("LoadRun", "compare_loads", "read_load_run"),
    "workloads.report.render": ("lossless_failed", "margin_text", "to_json", "to_markdown"),
    "workloads.report.text": ("report_text", "sweep_report"),
    "workloads.runs.attempts": ("status_of",),
    "workloads.runs.store": ("home_short",),
    "workloads.stats.metrics": ("cell_acceptance",),
})

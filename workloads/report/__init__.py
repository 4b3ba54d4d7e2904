"""``ddtune report``: read runs, sweeps and searches back, compare configurations with 95% intervals, and
render the result.

The face: ``report`` (what ``ddtune report`` prints, one call), ``sweep_report`` and its renderings (a
sweep prints them when it ends), the past runs the console's results screen lists (``list_runs``: each a
``RunRow`` that compares with another and opens as text), the run an interrupted command continues
(``our_run``), and a path shown without the user's home.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.report.past": ("RunComparison", "RunRow", "list_runs"),
    "workloads.report.render": ("lossless_failed", "margin_text", "to_json", "to_markdown"),
    "workloads.report.report_case": ("our_run", "report"),
    "workloads.report.text": ("sweep_report",),
    "workloads.runs.store": ("home_short",),
})

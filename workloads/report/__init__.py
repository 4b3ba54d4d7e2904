"""``ddtune report``: read runs, sweeps and searches back, compare configurations with 95% intervals, and
render the result.

The face: ``report`` (what ``ddtune report`` prints, one call), the past runs the console's results
screen lists (``list_runs``: each a ``RunRow`` that compares with another and opens as text) and the run
an interrupted command continues (``our_run``). A sweep's report and its renderings come with its
outcome (workloads.sweep's ``SweepOutcome``).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.report.past": ("RunRow", "list_runs"),
    "workloads.report.report_case": ("our_run", "report"),
})

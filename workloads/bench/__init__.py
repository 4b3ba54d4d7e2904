"""``ddtune bench``: the benchmark matrix (prompts x context x concurrency x rate), one durable cell at a time.

The face: ``run_bench(url, BenchPlan(...))`` measures every cell against a server and records the run
under runs/ (resumable).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.bench.plan": ("BenchPlan", "CellKey", "RATES"),
    "workloads.bench.session": ("load_sets", "run_bench"),
    "workloads.runs.checks": ("PLAUSIBLE",),  # the bounds of a plan's numbers: the command line's too
})

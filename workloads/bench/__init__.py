"""``ddtune bench``: the benchmark matrix (context lengths x concurrency), one durable cell at a time.

The face: ``run_bench(url, BenchPlan(...))`` measures every cell against a server and records the run
under runs/ (resumable).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.bench.matrix": ("BenchPlan",),
    "workloads.bench.session": ("run_bench",),
})

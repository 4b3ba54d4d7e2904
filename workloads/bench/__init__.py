"""``ddtune bench``: the benchmark matrix (prompts x context x concurrency x rate), one durable cell at a time.

The face: ``run_bench(BenchSpec(...), on_event) -> BenchOutcome`` measures every cell against a server
and records the run under runs/ (resumable), reporting its progress and ``SetSkipped`` on its way, with
the text they make (``BenchLines``); the plan, the prompt sets a plan reads (a sweep reads them too), and
the command line's options checked as a plan's are (``option_value``).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.bench.bench_case": ("BenchOutcome", "BenchSpec", "SetSkipped", "run_bench"),
    "workloads.bench.lines": ("BenchLines",),
    "workloads.bench.options": ("option_value",),  # the command line's numbers, bounded as a plan's are
    "workloads.bench.plan": ("BenchPlan",),
    "workloads.bench.session": ("load_sets",),
})

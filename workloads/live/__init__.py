"""The live load the console plots (the coding problems, or any prompt source): a worker process that
keeps prompts in flight, its windows, the A/B of one configuration after another, and the runs it records.

The face: ``LoadProcess`` (the console's load, in a worker process) and the typed events it reports
(one set of records, in process and on the worker's pipe); ``LiveAB``, which takes those events, and
the figures and comparison it hands the A/B strip; the saved no-speculation baseline of the tok/s plot;
``run_load(LoadSpec, on_event) -> LoadOutcome``, the same load in the foreground (``ddtune load``),
and ``load_work``, the prompts it sends; ``load_sources``, the sources the console can pick and checks.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.live.ab": ("Comparison", "ConfigFigures", "LiveAB"),
    "workloads.live.baseline": ("find_no_spec_baseline",),
    "workloads.live.foreground": ("LoadOutcome", "LoadSpec", "run_load"),
    "workloads.live.events": ("LoadPaused", "LoadProcEvent", "LoadResumed", "LoadStarted", "LoadStopped",
                              "RequestDone", "StatsUpdated"),
    "workloads.live.proc": ("LoadProcess",),
    "workloads.live.sources": ("LoadSources", "load_sources"),  # the console's prompt sources, checked
    "workloads.live.work": ("load_work",),  # the prompts a load sends (the console checks a source with load_sources)
    "workloads.prompts.sources": ("BUILTIN_HELP",),
})

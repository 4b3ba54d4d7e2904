"""The live load the console plots (the coding problems, or any prompt source): a worker process that
keeps prompts in flight, its windows, the A/B of one configuration after another, and the runs it records.

The face: ``LoadProcess`` (the console's load, in a worker process) and the events it reports;
``LiveAB`` and its figures for the A/B strip (with the estimates they carry); the saved
no-speculation baseline of the tok/s plot; ``run_load``, the same load in the foreground
(``ddtune load``), and ``load_work``, the prompts it sends.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.live.ab": ("Comparison", "ConfigFigures", "LiveAB", "change_pct", "config_names"),
    "workloads.live.baseline": ("find_no_spec_baseline",),
    "workloads.live.foreground": ("run_load",),
    "workloads.live.events": ("LoadPaused", "LoadProcEvent", "LoadResumed", "LoadStarted", "LoadStopped",
                              "RequestDone", "StatsUpdated"),
    "workloads.live.proc": ("LoadProcess",),
    "workloads.live.work": ("load_work",),
    "workloads.prompts.sources": ("BUILTIN_HELP",),
    "workloads.stats.estimate": ("Estimate", "Ratio"),
})

"""The live load the console plots (the coding problems, or any prompt source): a worker process that
keeps prompts in flight, its windows, the A/B of one configuration after another, and the runs it records.

The face, one use case each: ``ConsoleLoad``, the console's load on its server session (the worker,
its pauses around restarts, the A/B and the saved no-speculation baseline), which hands the console
what to draw as typed updates (``StatsUpdated``, ``RequestDone``, ``LoadState``, ``NoSpecBaseline``,
``Comparison`` and its ``ConfigFigures``); ``run_load(LoadSpec, on_event) -> LoadOutcome``, the same
load in the foreground (``ddtune load``); and ``load_sources``, the prompt sources the console can
pick, each checked.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.live.ab": ("Comparison", "ConfigFigures"),
    "workloads.live.baseline": ("NoSpecBaseline",),
    "workloads.live.console_load": ("ConsoleLoad", "LoadState"),
    "workloads.live.foreground": ("LoadOutcome", "LoadSpec", "run_load"),
    "workloads.live.events": ("RequestDone", "StatsUpdated"),
    "workloads.live.sources": ("LoadSources", "load_sources"),  # the console's prompt sources, checked
})

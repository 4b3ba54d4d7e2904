"""Sweeps: bring the server to each configuration in turn (or several lanes at once) and measure it.

The face is the use case: ``run_sweep(SweepSpec, on_event) -> SweepOutcome`` (new from presets and plan
options, the plan built by the spec with the config's knob table, or resumed; on the managed server or
in parallel lanes, as the spec says), the events it reports (``SweepEvent``: the sweep's, and each
lane's) with what people see of them (``SweepView``: the sweep screen's tables and the command's lines),
and the GPU list check.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.machine.gpuset": ("parse_gpus",),
    "workloads.sweep.events": ("Applied", "CellFinished", "EvalFinished", "LaneClosed", "LaneEvent", "LaneMoved",
                               "LanesStarted", "LosslessChecked", "ServerApplied", "ServerPhaseChanged",
                               "SlotFinished", "SlotStarted", "SweepEvent", "SweepFinished", "SweepStarted"),
    "workloads.sweep.run": ("SweepOutcome", "SweepSpec", "run_sweep"),
    "workloads.sweep.view": ("SweepView",),
})

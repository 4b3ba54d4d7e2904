"""Sweeps: bring the server to each configuration in turn (or several lanes at once) and measure it.

The face: a plan (``build_plan``) started as a new sweep (``begin_serial`` on the managed server,
``start_sweep`` with ``LaneSettings`` for parallel lanes) or reopened (``resume_serial``,
``SweepStore``); the ``SweepEngine`` over a ``ManagedController``, or a ``LaneSweep`` over planned
lanes; the events both report; and what their printers need (the lossless line, a cell's acceptance,
the ``--gpus`` parser).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.machine.gpuset": ("parse_gpus",),
    "workloads.stats.metrics": ("cell_acceptance", "cell_acceptance_source"),
    "workloads.sweep.control": ("ManagedController", "baseline_config"),
    "workloads.sweep.engine": ("SweepEngine",),
    "workloads.sweep.events": ("Applied", "CellFinished", "EvalFinished", "LaneClosed", "LaneEvent", "LaneMoved",
                               "LanesStarted", "LosslessChecked", "ServerApplied", "ServerController",
                               "ServerPhaseChanged", "SlotFinished", "SlotStarted", "SweepEvent", "SweepFinished",
                               "SweepStarted"),
    "workloads.sweep.lanes": ("LanePool", "LaneSweep"),
    "workloads.sweep.lossless": ("describe_lossless",),
    "workloads.sweep.plan": ("SweepPlan", "SweepStore"),
    "workloads.sweep.spec": ("build_plan",),
    "workloads.sweep.start": ("LaneSettings", "begin_serial", "check_out_folder", "ran_in_lanes", "resume_serial",
                              "start_sweep"),
})

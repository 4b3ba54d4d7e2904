# The types of what workloads.sweep offers (its __init__.py loads each module on first use).

from backends.machine.gpuset import parse_gpus as parse_gpus
from workloads.sweep.events import (Applied as Applied, CellFinished as CellFinished, EvalFinished as EvalFinished,
                                    LaneClosed as LaneClosed, LaneEvent as LaneEvent, LaneMoved as LaneMoved,
                                    LanesStarted as LanesStarted, LosslessChecked as LosslessChecked,
                                    ServerApplied as ServerApplied, ServerPhaseChanged as ServerPhaseChanged,
                                    SlotFinished as SlotFinished, SlotStarted as SlotStarted,
                                    SweepEvent as SweepEvent, SweepFinished as SweepFinished,
                                    SweepStarted as SweepStarted)
from workloads.sweep.run import SweepOutcome as SweepOutcome, SweepSpec as SweepSpec, run_sweep as run_sweep
from workloads.sweep.view import SweepView as SweepView

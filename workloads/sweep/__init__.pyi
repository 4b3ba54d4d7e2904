# The types of what workloads.sweep offers (its __init__.py loads each module on first use).

from backends.machine.gpuset import parse_gpus as parse_gpus
from workloads.stats.metrics import cell_acceptance as cell_acceptance, cell_acceptance_source as cell_acceptance_source
from workloads.sweep.control import ManagedController as ManagedController, baseline_config as baseline_config
from workloads.sweep.engine import SweepEngine as SweepEngine
from workloads.sweep.events import (Applied as Applied, CellFinished as CellFinished, EvalFinished as EvalFinished,
                                    LaneClosed as LaneClosed, LaneEvent as LaneEvent, LaneMoved as LaneMoved,
                                    LanesStarted as LanesStarted, LosslessChecked as LosslessChecked,
                                    ServerApplied as ServerApplied, ServerController as ServerController,
                                    ServerPhaseChanged as ServerPhaseChanged, SlotFinished as SlotFinished,
                                    SlotStarted as SlotStarted, SweepEvent as SweepEvent,
                                    SweepFinished as SweepFinished, SweepStarted as SweepStarted)
from workloads.sweep.lanes import LanePool as LanePool, LaneSweep as LaneSweep
from workloads.sweep.lossless import describe_lossless as describe_lossless
from workloads.sweep.plan import SweepPlan as SweepPlan, SweepStore as SweepStore
from workloads.sweep.spec import build_plan as build_plan
from workloads.sweep.start import (LaneSettings as LaneSettings, begin_serial as begin_serial,
                                   check_out_folder as check_out_folder, ran_in_lanes as ran_in_lanes,
                                   resume_serial as resume_serial, start_sweep as start_sweep)

"""The plain-text lines a sweep's events make (``ddtune sweep`` and ``ddtune ab`` write them to stderr
while they run; the engine prints nothing): one per event worth a line, each lane's tagged with its
lane and GPUs.

Every event of the union is matched (``assert_never``): a new sweep event fails the type check here
until it says whether it is worth a line.
"""

from __future__ import annotations

from typing import assert_never

from workloads.stats.metrics import cell_acceptance, cell_acceptance_source
from workloads.sweep.events import (
    CellFinished, EvalFinished, LaneClosed, LaneEvent, LaneMoved, LanesStarted, LosslessChecked, ServerApplied,
    ServerPhaseChanged, SlotFinished, SlotStarted, SweepEvent, SweepFinished, SweepStarted,
)
from workloads.sweep.lossless import describe_lossless


def eta_text(eta: float | None) -> str:
    return "" if eta is None else f"  (ETA {eta / 60:.1f} min)" if eta >= 120 else f"  (ETA {eta:.0f} s)"


def moved_line(event: LaneMoved) -> str:
    """A LaneMoved event, for the user."""
    return (f"lane {event.lane}: port {event.old_port} was taken before its server could bind it ({event.why}); "
            f"the lane moved to port {event.new_port} and starts again there")


def lanes_lines(event: LanesStarted, who: str) -> list[str]:
    """A LanesStarted event, for the user (``who``: "sweep" or "search"): each lane's GPUs and port, then
    what planning the lanes found worth saying."""
    return [f"{who}: lane {lane.index}: "
            f"{', '.join(d.describe() for d in lane.devices) or 'GPU ' + lane.visible_devices}, port {lane.port}"
            for lane in event.lanes] + [f"{who}: note: {note}" for note in event.notes]


def first_line(text: str | None) -> str:
    return text.splitlines()[0] if text else ""


def cell_line(event: CellFinished) -> str:
    c = event.cell
    tok = c.get("output_tok_s")
    acc, source = cell_acceptance(c), cell_acceptance_source(c)
    what = f"{c['prompts']} " if c.get("prompts") else ""
    rate = f" rate {c['request_rate']:g}/s" if c.get("request_rate") is not None else ""
    shared = f"; CONTENDED: {c.get('note') or 'other traffic on the server'}" if c.get("contended") else ""
    return (f"    cell {event.cells_done}/{event.cells_total}: {what}ctx {c['context']} c {c['concurrency']}{rate}: "
            f"{tok or 0:.1f} tok/s" + (f", accept {acc:.2f} ({source})" if acc else "") + shared
            + eta_text(event.eta_s))


class SweepLines:
    """The lines of a sweep's event stream (serial or in lanes); remembers what later lines need (the
    run count, the last phase said, each lane's GPUs) and the sweep's folder once it is known."""

    def __init__(self) -> None:
        self.total = 0
        self.last_phase: tuple[int, str] | None = None
        self.gpus: dict[int, str] = {}
        self.path: str | None = None

    def __call__(self, event: SweepEvent) -> list[str]:
        match event:
            case LanesStarted():
                self.gpus = {lane.index: lane.visible_devices for lane in event.lanes}
                return lanes_lines(event, "sweep")
            case LaneEvent():
                tag = f"[lane {event.lane} GPU {self.gpus.get(event.lane, '?')}] "
                return [tag + line for line in self(event.event)]
            case LaneMoved():
                return [f"sweep: {moved_line(event)}"]
            case LaneClosed():
                return [f"sweep: lane {event.lane}: {event.what}"]
            case SweepStarted():
                self.total, self.path = len(event.slots), event.path
                done = f", {len(event.done)} already done (resuming)" if event.done else ""
                return [f"sweep: {self.total} run(s){done}; folder {event.path}"]
            case SlotStarted():
                s = event.slot
                return [f"[{s.index + 1}/{self.total}] {s.config} (run {s.repeat}): "
                        f"{'restarting the server' if event.restart else 'server already runs it'}"
                        f"{eta_text(event.eta_s)}"]
            case ServerPhaseChanged():
                key = (event.slot.index, event.phase)
                if key == self.last_phase:
                    return []
                self.last_phase = key
                return [f"    {event.phase}{': ' + event.detail if event.detail else ''}"]
            case ServerApplied():
                a = event.applied
                took = f" in {a.restart_s:.1f} s" if a.restart_s is not None else ""
                return [f"    server {'ready' + took if a.ok else 'FAILED: ' + first_line(a.reason)}"]
            case CellFinished():
                return [cell_line(event)]
            case EvalFinished():
                return [f"    coding eval: pass {event.summary.get('pass', 0)}/{sum(event.summary.values())}"]
            case LosslessChecked():
                return [f"    {describe_lossless(event.result)}"]
            case SlotFinished():
                r = event.record
                return [] if r.status == "done" else [
                    f"    {r.slot.config} run {r.slot.repeat} FAILED (recorded, sweep goes on): {first_line(r.reason)}"]
            case SweepFinished():
                return [f"sweep {event.status}: {event.done} run(s) done, {event.failed} failed; folder {event.path}"]
            case _:
                assert_never(event)

"""What the console's sweep screen shows of a sweep's events, as plain data: its slot table (one row per
run), its lane table (one row per lane), its status line and its notices. The screen draws a
``Change`` as it comes; nothing here knows a widget.

Every event of the union is matched (``assert_never``): a new sweep event fails the type check here
until it says what the screen shows of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import assert_never

from workloads.stats.metrics import cell_acceptance
from workloads.sweep.events import (
    CellFinished, EvalFinished, LaneClosed, LaneEvent, LaneMoved, LanesStarted, LosslessChecked, ServerApplied,
    ServerPhaseChanged, SlotFinished, SlotStarted, SweepEvent, SweepFinished, SweepStarted,
)
from workloads.sweep.lossless import describe_lossless

SLOT_COLUMNS = ("#", "config", "status", "best tok/s", "accept", "lossless", "note")
LANE_COLUMNS = ("lane", "GPU", "port", "phase", "run", "progress")
STATUS, BEST, ACCEPT, LOSSLESS, NOTE = 2, 3, 4, 5, 6          # slot table columns
PORT, PHASE, RUN, PROGRESS = 2, 3, 4, 5                      # lane table columns


@dataclass(frozen=True)
class Mark:
    """Text and how loud it is: "" plain, "good" (green), "bad" (red, bold), "warn" (yellow); the search's
    board adds "strong" (bold), "win" (bold green) and "cmd" (a command to run)."""

    text: str
    tone: str = ""


@dataclass
class Change:
    """What one event changes on the screen. Rows are (key, cells); cells are (key, column, Mark)."""

    slot_rows: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    slot_cells: list[tuple[int, int, Mark]] = field(default_factory=list)
    lane_rows: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    lane_cells: list[tuple[int, int, str]] = field(default_factory=list)
    status: str | None = None                 # plain text, never markup
    notices: list[tuple[str, bool]] = field(default_factory=list)  # (text, an error)
    lines: list[str] = field(default_factory=list)  # the log's lines for it (a SweepView's: ddtune sweep's stderr)


def lossless_mark(result: dict) -> Mark:
    """A slot's lossless check in the table: ``identical 8/8`` (green), ``DIFFERS 3/8 @12,40,7…`` (red:
    where the first differing tokens are, three at most), ``baseline 8 prompts`` (recorded), or
    ``skipped: why`` (yellow when the check failed)."""
    status = result.get("status")
    if status == "recorded":
        return Mark(f"baseline {result.get('prompts')} prompts")
    if status == "compared":
        n, k = result.get("prompts"), result.get("diverged")
        if not k:
            return Mark(f"identical {n}/{n}", "good")
        first = [str(p) for p in result.get("first") or () if p is not None]
        at = ",".join(first[:3]) + ("…" if len(first) > 3 else "")
        return Mark(f"DIFFERS {k}/{n}" + (f" @{at}" if at else ""), "bad")
    if status == "error":
        return Mark(f"skipped: {result.get('error')}"[:40], "warn")
    return Mark(f"skipped: {status}")


def eta_cell(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


class SweepBoard:
    """The sweep screen's tables as events fill them; ``board(event)`` says what changed.
    ``duration``: how an ETA reads (the console's own format)."""

    slot_columns, lane_columns = SLOT_COLUMNS, LANE_COLUMNS

    def __init__(self, duration: Callable[[float | None], str] = eta_cell) -> None:
        self.duration = duration
        self.best: dict[int, float] = {}

    def __call__(self, event: SweepEvent) -> Change:
        change = Change()
        self._show(event, None, change)
        return change

    def _show(self, event: SweepEvent, lane: int | None, change: Change) -> None:
        def slot_cell(index: int, column: int, value: str | Mark) -> None:
            change.slot_cells.append((index, column, value if isinstance(value, Mark) else Mark(value)))

        def lane_cell(column: int, value: str) -> None:  # the lane's row too, in a parallel sweep
            if lane is not None:
                change.lane_cells.append((lane, column, value))

        match event:
            case LanesStarted():
                change.lane_rows += [(found.index, (str(found.index), found.visible_devices, str(found.port),
                                                    "waiting", "-", "-")) for found in event.lanes]
                change.notices += [(note, False) for note in event.notes]
            case LaneClosed():
                change.lane_cells.append((event.lane, PHASE, event.what[:40]))
            case LaneMoved():
                change.lane_cells.append((event.lane, PORT, str(event.new_port)))
                change.notices.append(
                    (f"lane {event.lane}: port {event.old_port} was taken; moved to {event.new_port}", False))
            case LaneEvent():
                self._show(event.event, event.lane, change)
            case SweepStarted():
                change.slot_rows += [(slot.index, (str(slot.index + 1), slot.config,
                                                   "done" if slot.index in event.done else "waiting", "-", "-", ""))
                                     for slot in event.slots]
                change.status = f"sweep {event.path}: {len(event.slots)} runs, ETA {self.duration(event.eta_s)}"
            case SlotStarted():
                slot = event.slot
                slot_cell(slot.index, STATUS, "restarting" if event.restart else "running")
                change.status = f"run {slot.index + 1}: {slot.config}, ETA {self.duration(event.eta_s)}"
                lane_cell(PHASE, "restarting" if event.restart else "running")
                lane_cell(RUN, f"{slot.index + 1} {slot.config} r{slot.repeat}")
                lane_cell(PROGRESS, "-")
            case ServerPhaseChanged():
                slot_cell(event.slot.index, NOTE, f"{event.phase} {event.detail}"[:40])
                lane_cell(PHASE, f"{event.phase} {event.detail}"[:40])
            case ServerApplied():
                lane_cell(PHASE, "measuring" if event.applied.ok else "server FAILED")
            case CellFinished():
                index = event.slot.index
                slot_cell(index, STATUS, f"cells {event.cells_done}/{event.cells_total}")
                self.best[index] = max(float(event.cell.get("output_tok_s") or 0), self.best.get(index, 0.0))
                slot_cell(index, BEST, f"{self.best[index]:.0f}")
                accept = cell_acceptance(event.cell)
                slot_cell(index, ACCEPT, "-" if accept is None else f"{accept:.2f}")
                change.status = (f"run {index + 1}: cell {event.cells_done}/{event.cells_total}, "
                                 f"ETA {self.duration(event.eta_s)}")
                lane_cell(PROGRESS, f"cells {event.cells_done}/{event.cells_total}")
            case LosslessChecked():
                slot_cell(event.slot.index, LOSSLESS, lossless_mark(event.result))
                if event.result.get("status") == "compared" and event.result.get("diverged"):
                    change.notices.append((f"{event.slot.config}: {describe_lossless(event.result)}", True))
            case SlotFinished():
                slot_cell(event.record.slot.index, STATUS, event.record.status)
                slot_cell(event.record.slot.index, NOTE, (event.record.reason or "")[:60])
                lane_cell(PHASE, event.record.status)
            case EvalFinished() | SweepFinished():
                pass
            case _:
                assert_never(event)

"""What a sweep reports, and what its server controller answers: plain records, no engine.

Split from workloads/sweep/engine.py so readers (the console's sweep screen) can name the events without
importing the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from backends.server import Lane, Phase
from workloads.sweep.plan import Slot, SlotRecord, SweepConfig

# how a controller tells the start of a slot's server: its phase and detail, or a note it said
Progress = Callable[[Phase | Literal["note"], str], None]


@dataclass(frozen=True)
class Applied:
    """The server after ``apply``: ready and verified (``ok``), or why not."""

    ok: bool
    url: str | None
    restarted: bool
    reason: str | None = None
    restart_s: float | None = None          # wall time of stop + start + ready, when restarted
    phases: dict[str, float] = field(default_factory=dict)  # per startup phase, seconds
    info: dict[str, Any] = field(default_factory=dict)      # pid, launch command, version, effective knobs
    api_key: str | None = None  # the key the server was launched with (never recorded), if any


class ServerController(Protocol):
    async def apply(self, config: SweepConfig, progress: Progress) -> Applied: ...

    async def shutdown(self) -> str | None: ...

    def restart_needed(self, config: SweepConfig) -> bool: ...


# --- events (past-tense facts) -------------------------------------------------------------
@dataclass(frozen=True)
class SweepStarted:
    path: str
    slots: tuple[Slot, ...]
    done: tuple[int, ...]          # slot indexes already finished (resume)
    eta_s: float | None


@dataclass(frozen=True)
class SlotStarted:
    slot: Slot
    restart: bool
    eta_s: float | None


@dataclass(frozen=True)
class ServerPhaseChanged:
    """The slot's server moved to ``phase`` (``detail``: its progress), or said something on the way
    (``"note"``: a line ddtune said, e.g. waiting for another lane's server)."""

    slot: Slot
    phase: Phase | Literal["note"]
    detail: str


@dataclass(frozen=True)
class ServerApplied:
    slot: Slot
    applied: Applied


@dataclass(frozen=True)
class CellFinished:
    slot: Slot
    cell: dict
    cells_done: int
    cells_total: int
    eta_s: float | None


@dataclass(frozen=True)
class EvalFinished:
    slot: Slot
    summary: dict


@dataclass(frozen=True)
class LosslessChecked:
    """The slot's lossless check (workloads.sweep.lossless): recorded, compared, skipped or failed."""

    slot: Slot
    result: dict


@dataclass(frozen=True)
class SlotFinished:
    record: SlotRecord
    eta_s: float | None


@dataclass(frozen=True)
class SweepFinished:
    path: str
    status: str        # done | interrupted | failed
    done: int
    failed: int


@dataclass(frozen=True)
class LanesStarted:
    """A parallel sweep's lanes (backends.server.Lane: index, GPUs, port) and what the user should know."""

    lanes: tuple[Lane, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaneEvent:
    """An event of one lane of a parallel sweep (slots, phases, cells, finished runs)."""

    lane: int
    event: SweepEvent


@dataclass(frozen=True)
class LaneMoved:
    """A lane's port was taken between planning and its server's bind: the lane moved to
    ``new_port`` and its start is tried once more there."""

    lane: int
    old_port: int
    new_port: int
    why: str


@dataclass(frozen=True)
class LaneClosed:
    """A lane's server at the end of the sweep: what was done with it (stopped, kept)."""

    lane: int
    what: str


SweepEvent = SweepStarted | SlotStarted | ServerPhaseChanged | ServerApplied | CellFinished | EvalFinished | \
    LosslessChecked | SlotFinished | SweepFinished | LanesStarted | LaneEvent | LaneMoved | LaneClosed

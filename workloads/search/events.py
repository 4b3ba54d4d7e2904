"""What a search reports: plain records, no engine.

Split from workloads/search/engine.py, as workloads/sweep/events.py is from the sweep engine, so readers (the
console's search screen) can name the events without importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from workloads.stats.estimate import Estimate
from workloads.search.space import Point, SearchSpace
from workloads.search.strategy import Decision, Observation, RoundPlan
from workloads.sweep.events import LaneClosed, LanesStarted, SweepEvent


# --- events (past-tense facts) -------------------------------------------------------------
@dataclass(frozen=True)
class SearchStarted:
    path: str
    space: SearchSpace
    start: Point
    replayed: int        # rounds already recorded (resume)
    restarts: int        # restarts those rounds used
    expected_restart_s: float | None


@dataclass(frozen=True)
class RoundStarted:
    plan: RoundPlan
    restarts_needed: int  # at most
    restarts_so_far: int


@dataclass(frozen=True)
class RoundProgress:
    """A sweep event of the round under way (restart, server phase, cell)."""

    plan: RoundPlan
    event: SweepEvent


@dataclass(frozen=True)
class RoundFinished:
    plan: RoundPlan
    observations: tuple[Observation, ...]
    estimates: tuple[Estimate | None, ...]   # pooled over every round so far, one per observation
    decisions: tuple[Decision, ...]          # races this round ended


@dataclass(frozen=True)
class SearchFinished:
    path: str
    status: str           # done | interrupted | failed
    summary: dict


# What a search run reports (workloads.search.run_search): the engine's events, each round's sweep events
# (RoundProgress), and on lanes the lanes planned (LanesStarted) and what was done with each at the end.
SearchEvent = SearchStarted | RoundStarted | RoundProgress | RoundFinished | SearchFinished | LanesStarted | LaneClosed

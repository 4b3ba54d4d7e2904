"""Which configurations a search measures next, and for how long. Pure: no I/O, no clock.

A restart costs minutes on a real GPU (the weights load again) and a minute of measurement tells
configurations apart, so the search spends restarts, not measurement, sparingly:

- **Lines, knob by knob.** Starting from the configuration the server runs (else the middle of the
  space), the search races the *line* of the first knob (every value of that knob, the others held),
  moves to the winner, then races the next knob's line through it, and so on: ``1 + sum(values - 1)``
  configurations per pass instead of the grid's product. A second pass (``passes``) re-opens the
  lines a move changed, for knobs that interact. A line raced once is never raced again.
- **Successive halving inside a race.** Rung 1 measures every candidate for ``waves`` waves; each
  later rung keeps the better ``1/eta`` (never fewer than the leader and its closest rival) and
  brings them to ``eta`` times the waves. A race stops early once the leader's lead over every
  rival is clear at 95% (the lower end of the interval of leader/rival tok/s is above 1); after
  ``rungs`` rungs it takes the leader by its mean and says the lead is not clear.
- **Order.** A round measures the configuration already running first (no restart), then the new
  ones, then the measured ones from worst to best: the round ends on the likely survivor, which the
  next round then measures first without a restart. Data carries over: a configuration measured in
  an earlier line only tops up the waves it lacks. In a race of two (nothing left to halve) the
  first one measured gets the last rung's waves at once: later rungs measure only the other, which
  is running then, so a line of two values costs two restarts, as its grid does, not one a rung.
- **Final check.** Any measured configuration whose mean beats the final incumbent's is raced
  against it at the incumbent's number of waves.

The interval: every wave (``concurrency`` requests released together) is one tok/s sample (its
output tokens over its wall time, prefill included); a configuration's tok/s is the mean of its
waves with a Student-t interval, and a ratio's interval comes from workloads.stats.estimate.ratio.

Written as a generator (``_walk``) so the sequence of passes, lines and rungs reads as a loop; the
search yields a RoundPlan, the caller measures it and passes the Observations to ``observe``. The
same observations replayed give the same plans, which is how a search resumes.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field

from backends.core import UsageError
from backends.core import bounded
from workloads.runs.checks import MAX_SECONDS, MAX_TOK_S, plausible
from workloads.stats.estimate import Estimate, Ratio, mean_sd, ratio
from workloads.search.space import Point, SearchSpace


@dataclass(frozen=True)
class SearchOptions:
    waves: int = 4                  # waves per configuration in a race's first rung
    eta: int = 2                    # each rung keeps the better 1/eta and multiplies the waves by eta
    rungs: int = 3                  # rungs per race; the last decides by the mean
    passes: int = 1                 # passes over the knobs
    max_restarts: int | None = None  # stop before a round that would need more restarts than this in all
    lanes: int = 1                  # servers measuring a round at once (--parallel): restarts are summed over them

    def __post_init__(self) -> None:
        for name in ("waves", "eta", "rungs", "passes", "lanes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (2 if name == "eta" else 1):
                low = 2 if name == "eta" else 1
                raise UsageError(f"search option {name} must be an integer >= {low}, got {value!r}",
                                 hint="--parallel 2" if name == "lanes" else f"--{name} {max(low, 2)}")
        if self.max_restarts is not None and self.max_restarts < 1:
            raise UsageError(f"--max-restarts must be at least 1, got {self.max_restarts}", hint="--max-restarts 10")

    def to_json(self) -> dict:
        doc = {"waves": self.waves, "eta": self.eta, "rungs": self.rungs, "passes": self.passes,
               "max_restarts": self.max_restarts}
        return doc if self.lanes == 1 else {**doc, "lanes": self.lanes}

    @classmethod
    def from_json(cls, data: dict) -> SearchOptions:
        restarts = data.get("max_restarts")
        return cls(plausible(data["waves"], "waves"), plausible(data["eta"], "eta"), plausible(data["rungs"], "rungs"),
                   plausible(data["passes"], "passes"),
                   None if restarts is None else plausible(restarts, "restarts", "max_restarts"),
                   plausible(data.get("lanes", 1), "lanes"))


@dataclass(frozen=True)
class Ask:
    """Measure ``point`` for ``waves`` more waves."""

    point: Point
    waves: int


@dataclass(frozen=True)
class RoundPlan:
    """One round: the configurations to measure, in run order. ``stage`` is the knob whose line is
    raced (or "final"), ``through`` the incumbent the line goes through, ``need`` the waves each
    candidate has in all once the round is done."""

    number: int
    stage: str
    through: Point
    rung: int
    need: int
    asks: tuple[Ask, ...]

    def to_json(self) -> dict:
        return {"number": self.number, "stage": self.stage, "through": list(self.through), "rung": self.rung,
                "need": self.need, "asks": [{"point": list(a.point), "waves": a.waves} for a in self.asks]}


@dataclass(frozen=True)
class Observation:
    """What measuring one Ask gave: per-wave tok/s samples, whether the server restarted for it,
    or why the configuration failed (it then leaves the search)."""

    point: Point
    samples: tuple[float, ...] = ()
    restarted: bool = False
    restart_s: float | None = None
    failed: str | None = None
    where: str | None = None  # the folder its data is in
    lane: int | None = None   # the lane that measured it (--parallel), and that lane's GPUs
    gpus: tuple[str, ...] = ()

    def to_json(self) -> dict:
        doc = {"point": list(self.point), "samples": list(self.samples), "restarted": self.restarted,
               "restart_s": self.restart_s, "failed": self.failed, "where": self.where}
        return doc if self.lane is None else {**doc, "lane": self.lane, "gpus": list(self.gpus)}

    @classmethod
    def from_json(cls, data: dict, space: SearchSpace) -> Observation:
        lane, restart_s, failed = data.get("lane"), data.get("restart_s"), data.get("failed")
        return cls(space.point(data["point"]),
                   tuple(bounded(s, 0, MAX_TOK_S, "samples") for s in data.get("samples") or ()),
                   bool(data.get("restarted")),
                   None if restart_s is None else bounded(restart_s, 0, MAX_SECONDS, "restart_s"),
                   None if failed is None else str(failed), data.get("where"),
                   None if lane is None else plausible(lane, "lanes", "lane", low=0),
                   tuple(str(g) for g in data.get("gpus") or ()))


@dataclass(frozen=True)
class Decision:
    """How a race ended: its winner, the closest rival, the margin winner/rival and whether it is clear."""

    stage: str
    round: int
    winner: Point
    rival: Point | None
    margin: Ratio | None
    clear: bool


class _BudgetSpent(Exception):
    pass


@dataclass
class Search:
    space: SearchSpace
    options: SearchOptions
    start: Point
    running: Point | None = None  # the configuration the server runs now (None: none of the space's)
    samples: dict[Point, list[float]] = field(default_factory=dict)
    failed: dict[Point, str] = field(default_factory=dict)
    restarts: int = 0
    restart_s: list[float] = field(default_factory=list)  # wall time of each timed restart
    rounds: list[RoundPlan] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    placements: dict[Point, list[tuple[int, tuple[str, ...], int]]] = field(default_factory=dict)  # (lane, gpus, waves)
    stop_reason: str | None = None
    best: Point | None = None

    def __post_init__(self) -> None:
        self._walker = self._walk()
        self._pending: RoundPlan | None = None
        self._advance()

    # --- the caller's side ---------------------------------------------------------------------
    def propose(self) -> RoundPlan | None:
        """The next round to measure; None when the search is over."""
        return self._pending

    def observe(self, results: list[Observation]) -> None:
        """Record what the proposed round measured, then plan the next one."""
        for obs in results:
            if obs.restarted:
                self.restarts += 1
                if obs.restart_s is not None:
                    self.restart_s.append(float(obs.restart_s))
            if obs.failed:
                self.failed[obs.point] = obs.failed
                self.running = None
                continue
            self.samples.setdefault(obs.point, []).extend(obs.samples)
            if obs.lane is not None:
                self.placements.setdefault(obs.point, []).append((obs.lane, obs.gpus, len(obs.samples)))
            self.running = obs.point
        self._advance()

    @property
    def done(self) -> bool:
        return self._pending is None

    # --- estimates -----------------------------------------------------------------------------
    def have(self, point: Point) -> int:
        return len(self.samples.get(point, ()))

    def estimate(self, point: Point) -> Estimate | None:
        values = self.samples.get(point)
        if not values:
            return None
        m, sd = mean_sd(values)
        if sd is None:
            return Estimate(m, None, 0, 1, "waves")
        return Estimate(m, sd / math.sqrt(len(values)), len(values) - 1, len(values), "waves")

    def mean(self, point: Point) -> float:
        est = self.estimate(point)
        return est.mean if est is not None else -math.inf

    def margin(self, a: Point, b: Point) -> Ratio | None:
        return ratio(self.estimate(a), self.estimate(b))

    def clear(self, leader: Point, rival: Point) -> bool:
        """The leader's lead over ``rival`` is clear at 95%: the ratio's interval lies above 1."""
        r = self.margin(leader, rival)
        return r is not None and r.lo is not None and r.lo > 1.0

    def measured(self) -> list[Point]:
        """Every configuration with data, best mean first."""
        return sorted((p for p in self.samples if p not in self.failed), key=self.mean, reverse=True)

    # --- the walk ------------------------------------------------------------------------------
    def _advance(self) -> None:
        try:
            self._pending = next(self._walker)
        except StopIteration:
            self._pending = None

    def _walk(self) -> Generator[RoundPlan, None, None]:
        incumbent = self.start
        raced: set[tuple[Point, ...]] = set()
        try:
            for _ in range(self.options.passes):
                moved = False
                for axis, (name, values) in enumerate(self.space.axes):
                    line = self.space.line(incumbent, axis)
                    if len(values) < 2 or line in raced:
                        continue
                    raced.add(line)
                    winner = yield from self._race(name, incumbent, list(line), self.options.waves)
                    if winner is not None and winner != incumbent:
                        incumbent, moved = winner, True
                if not moved:
                    break
            rivals = [p for p in self.measured() if p != incumbent and self.mean(p) > self.mean(incumbent)]
            if rivals and incumbent not in self.failed:
                winner = yield from self._race("final", incumbent, [incumbent, *rivals], self.have(incumbent))
                incumbent = winner if winner is not None else incumbent
        except _BudgetSpent as spent:
            self.stop_reason = str(spent)
        measured = self.measured()
        self.best = incumbent if incumbent in measured else (measured[0] if measured else None)

    def _race(self, stage: str, through: Point, candidates: list[Point],
              need: int) -> Generator[RoundPlan, None, Point | None]:
        cands = [p for p in candidates if p not in self.failed]
        for rung in range(1, self.options.rungs + 1):
            asks = self._order([p for p in cands if self.have(p) < need])
            if asks:
                # a race of two has nothing left to halve: the one measured first runs only now (it is
                # running, or restarted for it), so it gets the last rung's waves at once and every later
                # rung measures only the other, which is running then: no restart the grid would not make
                last = need * self.options.eta ** (self.options.rungs - rung)
                two = len(asks) == 2 == len(cands)
                waves = [(last if i == 0 and two else need) - self.have(p) for i, p in enumerate(asks)]
                plan = RoundPlan(len(self.rounds) + 1, stage, through, rung, need,
                                 tuple(Ask(p, n) for p, n in zip(asks, waves, strict=True)))
                self._check_budget(plan)
                self.rounds.append(plan)
                yield plan
            cands = [p for p in cands if p not in self.failed and self.have(p)]
            if not cands:
                return None
            ranked = sorted(cands, key=self.mean, reverse=True)
            leader = ranked[0]
            rivals = [p for p in ranked[1:] if not self.clear(leader, p)]
            if not rivals or rung == self.options.rungs:
                rival = next(iter(rivals or ranked[1:]), None)
                self.decisions.append(Decision(stage, len(self.rounds), leader, rival,
                                               self.margin(leader, rival) if rival else None, not rivals))
                return leader
            keep = max(1, math.ceil(len(cands) / self.options.eta) - 1)
            cands = [leader, *rivals[:keep]]
            need *= self.options.eta
        return None  # unreachable: the last rung returns

    def _order(self, asks: list[Point]) -> list[Point]:
        """Running first (no restart), then new configurations, then measured ones worst to best."""
        first = [p for p in asks if p == self.running]
        rest = [p for p in asks if p != self.running]
        new = [p for p in rest if not self.have(p)]
        return first + new + sorted((p for p in rest if self.have(p)), key=self.mean)

    def restarts_needed(self, plan: RoundPlan) -> int:
        """Restarts the round needs at most: one per configuration except one already running. On
        several lanes every configuration may need one (a re-measured one moves to another GPU)."""
        if self.options.lanes > 1:
            return len(plan.asks)
        return sum(1 for i, a in enumerate(plan.asks) if not (i == 0 and a.point == self.running))

    def _check_budget(self, plan: RoundPlan) -> None:
        cap = self.options.max_restarts
        if cap is not None and self.restarts + self.restarts_needed(plan) > cap:
            raise _BudgetSpent(f"the restart budget is spent ({self.restarts} used; round {plan.number} "
                               f"would need {self.restarts_needed(plan)} more, --max-restarts {cap})")

"""A search's rounds measured on several lanes at once (``ddtune search --parallel N``).

The lanes are a parallel sweep's (workloads/sweep/lanes.py): each its own server, GPU set and
port, set up by ``plan_lanes`` and recorded in the state dir, so ``down`` finds them. One LanePool
lives for the whole search, so a lane keeps the configuration it last ran from one round to the
next; each round is a LaneSweep over that pool in the round's sweep folder (``round-NN/``), and
the search closes the pool at its end (every lane server stopped unless ``--keep-server``).

Which lane measures which configuration (``place``):

- **A re-measured configuration moves.** One that already has waves (successive halving's longer
  rung, a final check, a line through a measured point) goes to the lane where it has the fewest
  waves so far, so its estimate pools more than one GPU and the winner of a race is not decided by
  one card. This costs a restart a sticky placement would not, and is the price of fairness.
  Queues stay balanced: no lane gets more than its share (round up) of the round.
- **Otherwise a lane keeps what it runs.** A configuration a lane's server runs already goes to
  that lane, first in its queue: measured without a restart.
- **New ones fill the shortest queue.** In a round with no re-measured configuration a lane that
  runs dry takes work from the busiest one; in a re-measuring round it does not (that would undo
  the rotation).

Each measurement's lane and GPUs go into its Observation (rounds.jsonl) and the summary.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from backends.knobs import ServerConfig
from workloads.search.engine import Target, observations, round_sweep
from workloads.search.space import Point, SearchSpace
from workloads.search.store import SearchStore
from workloads.search.strategy import Observation, RoundPlan
from workloads.sweep.events import SweepEvent
from workloads.sweep.lanes import LanePool, LaneSweep
from workloads.sweep.plan import Slot

History = dict[Point, dict[int, int]]  # configuration -> lane -> waves measured there


def history(rounds: list[dict], space: SearchSpace) -> History:
    """Waves per configuration and lane from the recorded rounds (resume included)."""
    out: History = {}
    for record in rounds:
        for obs in record.get("observations") or ():
            if not isinstance(obs, dict) or not isinstance(obs.get("lane"), int):
                continue
            try:
                point = space.point(obs["point"])
            except (KeyError, TypeError, ValueError):
                continue
            lanes = out.setdefault(point, {})
            lanes[obs["lane"]] = lanes.get(obs["lane"], 0) + len(obs.get("samples") or ())
    return out


def place(pending: list[Slot], points: dict[str, Point], lanes: int, runs: Callable[[int, str], bool],
          seen: History) -> list[list[Slot]]:
    """Each lane's queue for the round's pending slots (see the module's docstring).
    ``runs(lane, config)``: that lane's server runs the configuration now."""
    queues: list[list[Slot]] = [[] for _ in range(lanes)]
    share = max(1, math.ceil(len(pending) / lanes))
    again = [s for s in pending if seen.get(points[s.config])]
    for slot in again:
        waves = seen[points[slot.config]]
        open_ = [i for i in range(lanes) if len(queues[i]) < share] or list(range(lanes))
        best = min(open_, key=lambda i: (waves.get(i, 0), not runs(i, slot.config), len(queues[i]), i))
        queues[best].append(slot)
    rest = [s for s in pending if s not in again]
    for slot in list(rest):
        home = next((i for i in range(lanes) if runs(i, slot.config)), None)
        if home is not None:
            queues[home].append(slot)
            rest.remove(slot)
    for slot in rest:
        queues[min(range(lanes), key=lambda i: (len(queues[i]), i))].append(slot)
    # what a lane runs goes first in its queue (no restart), the rest keep the plan's order
    out = []
    for i, queue in enumerate(queues):
        running = [s for s in queue if runs(i, s.config)]
        out.append(running + [s for s in queue if s not in running])
    return out


class LaneRoundRunner:
    """Measures a round's configurations on a LanePool's lanes at once (a RoundRunner)."""

    def __init__(self, pool: LanePool, base: ServerConfig, target: Target, search: SearchStore, *,
                 api_key: str | None = None, on_event: Callable[[RoundPlan, SweepEvent], None] | None = None) -> None:
        self.pool = pool
        self.base = base
        self.target = target
        self.search = search
        self.api_key = api_key
        self.on_event = on_event or (lambda plan, event: None)

    async def measure(self, plan: RoundPlan, space: SearchSpace, folder: Path) -> list[Observation]:
        configs, sweep, store = round_sweep(plan, space, folder, self.target)
        points = {c.name: a.point for c, a in zip(configs, plan.asks, strict=True)}
        by_name = {c.name: c for c in configs}
        seen = history(self.search.rounds(), space)
        lanes = self.pool.lanes

        def runs(i: int, name: str) -> bool:
            return self.pool.runs(lanes[i], by_name[name])

        remeasures = any(seen.get(p) for p in points.values())
        lane_sweep = LaneSweep(sweep, store, lanes, self.base, api_key=self.api_key, pool=self.pool,
                               on_event=lambda event: self.on_event(plan, event), steal=not remeasures,
                               placement=lambda pending: place(pending, points, len(lanes), runs, seen))
        return observations(plan, configs, await lane_sweep.run(), store, self.target)


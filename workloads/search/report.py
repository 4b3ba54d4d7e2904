"""What a search found, as the JSON summary (its lines: workloads/report/search_summary.py). Pure.

The summary (summary.json, and ``ddtune search --json``): the best configuration with its tok/s
and 95% interval, the closest measured rival and the margin best/rival with its interval ("clear"
when the interval lies above 1), the restarts used against a full grid's (one start per
configuration) with their measured seconds, every measured configuration, and each race's decision.
"""

from __future__ import annotations

import math
import statistics

from workloads.stats.estimate import Estimate, Ratio
from workloads.search.space import Point, SearchSpace
from workloads.report.search_summary import pct
from workloads.search.strategy import Decision, RoundPlan, Search

SCHEMA = "ddtune.search-summary/1"


def _est(est: Estimate | None) -> dict | None:
    return None if est is None else est.to_json()


def _ratio(r: Ratio | None) -> dict | None:
    return None if r is None else r.to_json()


def _config(space: SearchSpace, point: Point) -> dict:
    return {"label": space.label(point), "knobs": space.knob_values(point)}


def summarize(search: Search, target, path: str, status: str, wall_s: float | None = None) -> dict:
    space = search.space
    best = search.best if search.done else next(iter(search.measured()), None)
    rival = next((p for p in search.measured() if p != best), None)
    margin = search.margin(best, rival) if best is not None and rival is not None else None
    median = statistics.median(search.restart_s) if search.restart_s else None
    lanes = search.options.lanes
    return {
        "schema": SCHEMA, "path": path, "status": status,
        "space": {name: list(values) for name, values in space.axes}, "space_text": space.text(),
        "target": target.to_json(), "options": search.options.to_json(),
        "start": _config(space, search.start),
        "best": None if best is None else _measured(search, best),
        "rival": None if rival is None else _measured(search, rival),
        "margin": _ratio(margin), "clear": bool(margin is not None and margin.lo is not None and margin.lo > 1.0),
        "restarts": {"used": search.restarts, "grid": space.size, "share": search.restarts / space.size,
                     "seconds": sum(search.restart_s), "median_s": median,
                     "grid_estimate_s": None if median is None else median * space.size,
                     # seconds and grid_estimate_s add up every lane's restarts; on N lanes a grid
                     # restarts side by side, each lane ceil(grid / N) times
                     "summed_over_lanes": lanes,
                     "grid_wall_estimate_s": None if median is None else median * math.ceil(space.size / lanes)},
        "rounds": len(search.rounds), "stop_reason": search.stop_reason,
        "lanes": search.options.lanes, "wall_s": wall_s, "fairness": fairness(search, best, rival),
        "measured": [_measured(search, p) for p in search.measured()],
        "failed": [{**_config(space, p), "reason": why} for p, why in search.failed.items()],
        "decisions": [decision_json(space, d) for d in search.decisions],
    }


def _measured(search: Search, point: Point) -> dict:
    doc = {**_config(search.space, point), "tok_s": _est(search.estimate(point)), "waves": search.have(point)}
    return doc if search.options.lanes == 1 else {**doc, "lanes": placed(search, point)}


def placed(search: Search, point: Point) -> list[dict]:
    """Where a configuration's waves were measured: per lane, its GPUs and waves (a parallel search)."""
    by_lane: dict[int, dict] = {}
    for lane, gpus, waves in search.placements.get(point, ()):
        entry = by_lane.setdefault(lane, {"lane": lane, "gpus": list(gpus), "waves": 0})
        entry["waves"] += waves
    return [by_lane[k] for k in sorted(by_lane)]


def fairness(search: Search, best: Point | None, rival: Point | None) -> str | None:
    """A warning when the best and its rival were measured on disjoint GPUs: their margin is then
    confounded with the GPUs (None on one lane, or when they share a GPU)."""
    if search.options.lanes == 1 or best is None or rival is None:
        return None
    mine = {lane for lane, _, waves in search.placements.get(best, ()) if waves}
    theirs = {lane for lane, _, waves in search.placements.get(rival, ()) if waves}
    if not mine or not theirs or mine & theirs:
        return None
    return (f"{search.space.label(best)} ran only on lane(s) {', '.join(map(str, sorted(mine)))} and "
            f"{search.space.label(rival)} only on lane(s) {', '.join(map(str, sorted(theirs)))}: their margin "
            "includes any difference between those GPUs")


def decision_json(space: SearchSpace, d: Decision) -> dict:
    return {"stage": d.stage, "round": d.round, "winner": space.label(d.winner),
            "rival": space.label(d.rival) if d.rival is not None else None, "margin": _ratio(d.margin),
            "clear": d.clear}


# --- text (a summary read back: workloads/report/search_summary.py) ------------------------------
def round_title(space: SearchSpace, plan: RoundPlan) -> str:
    what = "final check" if plan.stage == "final" else f"{plan.stage} line through {space.label(plan.through)}"
    return f"round {plan.number} · {what} · rung {plan.rung}: {len(plan.asks)} configuration(s) to {plan.need} wave(s)"


def decision_line(space: SearchSpace, d: Decision) -> str:
    if d.rival is None:
        return f"  -> {space.label(d.winner)} (no rival left)"
    verdict = "clear at 95%" if d.clear else "not clear at 95%, taken by its mean"
    return f"  -> {space.label(d.winner)}: {pct(d.margin)} over {space.label(d.rival)}, {verdict}"

"""How a knob search begins: the request checked and planned into its search.json, one way for
``ddtune search`` and the console's search screen.

Everything is validated before anything runs: a bad field raises UsageError naming it and the fix
(the names are ``ddtune search``'s options, which the console's fields mirror). The plan records the
space, the options, the target cell, where the walk starts (``--start``, else the configuration the
server runs when it is in the space, else the middle of the space) and, as a sweep's manifest does
(workloads.sweep.start), where the measurements come from and what the server ran before.
"""

from __future__ import annotations

from pathlib import Path

from backends.core import UsageError
from backends.knobs import ServerConfig
from workloads.prompts.sources import load_source
from workloads.runs.store import new_run_folder
from workloads.search.engine import Target
from workloads.search.request import SearchRequest
from workloads.search.space import Point, SearchSpace, parse_search_space, parse_space
from workloads.search.store import SearchStore
from workloads.search.strategy import SearchOptions
from workloads.sweep.start import LaneSettings, origin


def _start(request: SearchRequest, space: SearchSpace, running: Point | None, config: ServerConfig) -> Point:
    if not request.start:
        return running if running is not None else space.middle()
    given = parse_space(request.start, config.knob_map, source="--start", table=config.knob_table)
    values = {name: vals[0] for name, vals in given.axes if len(vals) == 1}
    if set(values) != set(space.knobs) or len(values) != len(given.axes):
        raise UsageError(f"--start: give one value for each knob of the space ({', '.join(space.knobs)})",
                         hint=f"e.g. --start '{space.label(space.middle())}'")
    point = space.find(values)
    if point is None:
        raise UsageError(f"--start {request.start!r} is not a configuration of the space",
                         hint=f"pick values from --space '{space.text()}'")
    return point


def plan_search(request: SearchRequest, config: ServerConfig, running: ServerConfig | None) -> dict:
    """A new search's search.json, validated (UsageError naming the option) before anything runs.
    ``running``: the config the managed server runs now (None: none, or the search runs in lanes,
    whose servers start bare); the walk starts there when it is in the space."""
    if not request.space:
        raise UsageError("name the space to search", hint="ddtune search --space 'budget=4,8,16 topk=2,4,6'")
    if request.out:
        new_run_folder(request.out, "search.json", "search")  # refused before lanes are planned
    space = parse_search_space(request.space, config.knob_map, config.block_size, table=config.knob_table)
    options = SearchOptions(request.waves, 2, request.rungs, request.passes, request.max_restarts)
    target = Target(request.target_context, request.target_concurrency, request.max_tokens,
                    1 if request.warmup is None else request.warmup, prompts=request.prompts or "story",
                    ignore_eos=request.ignore_eos)
    load_source(target.prompts)  # a bad source is refused before anything starts
    at = space.find(running.knobs) if running is not None else None
    start = _start(request, space, at, config)
    return {"space": space.to_json(), "options": options.to_json(), "target": target.to_json(),
            "start": list(start), "running_at_start": list(at) if at is not None else None,
            **origin(config, running)}


def start_search(plan: dict, out: str | Path | None = None, lanes: LaneSettings | None = None,
                 lane_count: int = 0) -> SearchStore:
    """Create the search's folder (``out``, else runs/<time>-search) with its planned search.json; a
    search in ``lanes`` also records the lane settings and how many lanes it got (``lane_count``)."""
    if lanes is not None:
        plan = {**plan, "options": {**plan["options"], "lanes": lane_count}, "parallel": lanes.to_json()}
    return SearchStore.create(plan, out)

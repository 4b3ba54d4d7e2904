"""``ddtune search --parallel N [--gpus 0,1] [--gpus-per-server K]``: the lanes of a parallel search,
set up and validated exactly as a parallel sweep's (tui/commands/_lanes.py, workloads/sweep/lanes.py)
before anything is written or started, and the runner that measures each round on them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from backends.knobs import ServerConfig
from workloads.search import LaneRoundRunner
from workloads.sweep import LanePool, LaneSettings


@dataclass
class SearchLanes:
    settings: LaneSettings  # parallel, gpus, gpus_per_server: recorded in search.json for --resume
    pool: LanePool
    notes: tuple[str, ...]


def prepare(args, config: ServerConfig, manifest: dict | None) -> SearchLanes:
    """Validate the lane options and pick the lanes (GPU sets, ports); raises UsageError, naming the
    option, before anything runs. ``manifest``: the resumed search's search.json."""
    from backends.core import UsageError
    from tui.commands._lanes import lane_settings
    from tui.commands._server import note
    from workloads.sweep import ran_in_lanes

    if manifest is not None and not ran_in_lanes(manifest):
        raise UsageError("--resume: that search ran on one server, not in parallel lanes",
                         hint="resume it without --parallel, --gpus and --gpus-per-server")
    settings = lane_settings(args, manifest)
    lanes, notes = asyncio.run(settings.plan(config, note=note))
    return SearchLanes(settings, LanePool(lanes, config, keep_server=args.keep_server), tuple(notes))


def runner(found: SearchLanes, config: ServerConfig, target, store, printer, api_key: str | None):
    return LaneRoundRunner(found.pool, config, target, store, api_key=api_key, on_event=printer.progress)


def describe(found: SearchLanes) -> list[str]:
    """The lanes, for the user: GPUs and port of each, then plan_lanes's notes."""
    lines = []
    for lane in found.pool.lanes:
        devices = ", ".join(d.describe() for d in lane.devices)
        lines.append(f"search: lane {lane.index}: {devices or 'GPU ' + lane.visible_devices}, port {lane.port}")
    return lines + [f"search: note: {n}" for n in found.notes]

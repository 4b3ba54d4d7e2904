"""A knob search, assembled once: ``run_search(spec, on_event)`` for ``ddtune search`` and the console's
search screen.

The spec says what to search (a new ``SearchRequest``, or ``resume`` the search in ``out``), where (the
managed server, the console's session, or parallel lanes when lane options are given or the resumed
search ran in lanes) and what to do with the server at the end. The front ends only parse their
fields into a ``SearchSpec``, render the events (workloads.search.events: the engine's, each round's
sweep events as RoundProgress, the lanes as LanesStarted and LaneClosed) and print the outcome.

Order: a new search is planned and checked (space, --start, --out, prompts) before any lane is; a
resumed serial search cannot resume in lanes; the folder is written before the first restart. However
the run ends, every lane server is stopped (unless ``keep_server``) and the managed server goes back to
the config it ran before (unless ``keep_server``, or a cancel while ``restore_on_cancel()`` says no).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from backends.core import UsageError
from backends.knobs import ServerConfig
from workloads.search.engine import SearchEngine, SweepRoundRunner, Target
from workloads.search.events import RoundProgress, SearchEvent
from workloads.search.lanes import LaneRoundRunner
from workloads.report.search_summary import summary_lines
from workloads.search.request import SearchRequest
from workloads.search.start import plan_search, start_search
from workloads.search.store import SearchStore
from workloads.search.strategy import RoundPlan
from workloads.sweep.control import ManagedController
from workloads.sweep.events import LanesStarted, SweepEvent
from workloads.sweep.lanes import LanePool
from workloads.sweep.run import RunSpec
from workloads.sweep.start import LaneSettings, ran_in_lanes


@dataclass(frozen=True)
class SearchSpec(RunSpec):
    """What to search: a new search's ``request``, or None with ``resume`` (the search in ``out``, else
    the latest); how: RunSpec's options (workloads.sweep.run)."""

    config: ServerConfig
    request: SearchRequest | None = None
    resume: bool = False
    out: str | Path | None = None


@dataclass(frozen=True)
class SearchOutcome:
    """A search that ran to its end: its folder and its summary (summary.json's document)."""

    path: Path
    summary: dict

    @property
    def found(self) -> bool:
        """Whether a best configuration was found (``ddtune search`` exits 1 when none ran)."""
        return bool(self.summary.get("best"))

    def lines(self) -> list[str]:
        return summary_lines(self.summary)


async def run_search(spec: SearchSpec, on_event: Callable[[SearchEvent], None]) -> SearchOutcome:
    """Create or resume the search, run it to its end, restore the server(s). A cancel propagates (the
    search is recorded interrupted: ``resume`` continues it); its folder is in SearchStarted."""
    config = spec.config
    controller = ManagedController(config, session=spec.session)
    resumed = SearchStore.open(spec.out) if spec.resume else None
    manifest = resumed.read() if resumed is not None else None
    lanes = spec.asks_lanes() or ran_in_lanes(manifest)
    meta = None
    if resumed is None:  # planned and checked before any lane is; lanes start bare
        assert spec.request is not None, "a new search needs a request"
        request = spec.request
        running = None if lanes else await asyncio.to_thread(controller.running_config)
        meta = await asyncio.to_thread(plan_search, request, config, running)
    pool, settings = None, None
    if lanes:
        if manifest is not None and not ran_in_lanes(manifest):
            raise UsageError("--resume: that search ran on one server, not in parallel lanes",
                             hint="resume it without --parallel, --gpus and --gpus-per-server")
        settings = spec.lane_settings(manifest)
        found, notes = await settings.plan(config, note=spec.note)
        pool = LanePool(found, config, keep_server=spec.keep_server)
        on_event(LanesStarted(tuple(pool.lanes), tuple(notes)))
    async with spec.hold() if pool is None else nullcontext():
        return await _run(spec, controller, resumed, manifest, meta, settings, pool, on_event)


async def _run(spec: SearchSpec, controller: ManagedController, resumed: SearchStore | None, manifest: dict | None,
               meta: dict | None, settings: LaneSettings | None, pool: LanePool | None,
               on_event: Callable[[SearchEvent], None]) -> SearchOutcome:
    finished = False
    try:
        store, expected = await asyncio.to_thread(_open, spec, controller, resumed, manifest, meta, settings, pool)
        target = Target.from_json(store.read()["target"])

        def progress(plan: RoundPlan, event: SweepEvent) -> None:
            on_event(RoundProgress(plan, event))

        runner = (SweepRoundRunner(controller, target, api_key=spec.key(), on_event=progress,
                                   expected_restart_s=expected) if pool is None
                  else LaneRoundRunner(pool, spec.config, target, store, api_key=spec.key(), on_event=progress))
        engine = SearchEngine(store, runner, on_event=on_event, expected_restart_s=expected)
        summary = await engine.run()
        finished = True
    finally:
        if pool is not None:
            await pool.close(on_event)
        elif done := await spec.restore(controller, finished):
            spec.say(done)
    return SearchOutcome(store.path, summary)


def _open(spec: SearchSpec, controller: ManagedController, store: SearchStore | None, manifest: dict | None,
          meta: dict | None, settings: LaneSettings | None,
          pool: LanePool | None) -> tuple[SearchStore, float | None]:
    """The search's folder, where the managed server goes back at the end, and how long a restart is
    expected to take (reads server.json and the startup history, writes the folder: a thread)."""
    if store is not None:
        before = (manifest or {}).get("server_before")
        controller.remember_before(before["knobs"] if isinstance(before, dict) else None)
        return store, controller.expected_restart_s()
    assert meta is not None
    controller.remember_before(controller.running_config())
    out = spec.request.out if spec.request is not None else None
    store = start_search(meta, out) if pool is None else start_search(meta, out, settings, len(pool.lanes))
    return store, controller.expected_restart_s()

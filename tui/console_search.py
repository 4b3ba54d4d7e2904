"""The console's knob search (the search screen, tui/screens/search.py): its inputs checked, and the run.

Not widgets. ``parse_request`` reads the screen's fields when Start is pressed: pure, and a bad field
raises UsageError naming it and the fix, so nothing starts. ``ConsoleSearch.run`` runs in the screen's
worker, and it is ``ddtune search``'s run: the same search.json (workloads.search plans it), the same
SearchEngine with a SweepRoundRunner on the console's own ServerSession (ManagedController(config,
session=...), as the sweep screen's run, so the server panel follows every restart), or with GPUs one
lane per GPU (a LaneRoundRunner on a LanePool, as ``--parallel``); the same folder, runs/<time>-search,
so ``ddtune search --resume --out DIR`` continues a search cut short.

Stopping: a cancelled run records the search as interrupted (resumable), stops every lane server, and on
the console's own server either returns it to the config it ran before the search (leaving the screen,
as ``ddtune search`` does on Ctrl-C) or leaves it as it is (quitting: the quit dialog decides whether it
keeps running or stops).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from backends.core import UsageError
from backends.knobs import ServerConfig
from tui.controller import ConsoleController
from workloads.report import home_short
from workloads.search import SearchRequest


def _positive(field: str, text: str, example: str) -> int:
    value = text.strip()
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"{field}: {text.strip()!r} is not a whole number of at least 1", hint=f"e.g. {example}")
    return int(value)


def parse_request(config: ServerConfig, space: str, context: str, concurrency: str, gpus: str,
                  template: SearchRequest) -> SearchRequest:
    """The screen's fields as a request (``template`` gives what the screen does not ask: waves, rungs,
    tokens); UsageError or ConfigError naming the field and the fix. Reads no file."""
    from dataclasses import replace

    from workloads.search import parse_search_space
    from workloads.sweep import parse_gpus

    found = parse_search_space(space, config.knob_map, config.block_size, source="space", table=config.knob_table)
    lanes = None
    if gpus.strip():
        try:
            lanes = parse_gpus(gpus)
        except UsageError as exc:
            raise UsageError(exc.message.replace("--gpus", "GPUs", 1),
                             hint="e.g. 0,1 (the indices nvidia-smi shows), or empty for this console's server") \
                from None
    return replace(template, space=found.text(), gpus=lanes,
                   target_context=_positive("target context", context, "4096 (prompt tokens)"),
                   target_concurrency=_positive("concurrency", concurrency, "8 (requests per wave)"))


class ConsoleSearch:
    """One search from the console. ``restore``: on a cancel, return the console's server to the config
    it ran before (True, leaving the screen) or leave it as it is (False, quitting the console)."""

    def __init__(self, console: ConsoleController, request: SearchRequest) -> None:
        self.console = console
        self.request = request
        self.restore = True
        self.path: str | None = None  # the search's folder, once created

    async def run(self, on_event: Callable[[object], None], on_progress: Callable[[object, object], None],
                  on_note: Callable[[str], None]) -> dict:
        """Run the search; its summary. ``on_event``: the engine's events (workloads.search.engine),
        ``on_progress(plan, sweep_event)``: the round's restarts, phases and cells, ``on_note``: what
        the operator should know (lane notes, what was done with each server at the end)."""
        from workloads.search import (LaneRoundRunner, SearchEngine, SearchStore, SweepRoundRunner, Target, plan_search,
                                      start_search)
        from workloads.sweep import LaneClosed, LanePool, LaneSettings, ManagedController

        console, request = self.console, self.request
        config = console.config
        controller = ManagedController(config, session=console.session)
        lanes = LaneSettings.one_per_gpu(request.gpus) if request.gpus else None
        pool = None
        if lanes is not None:
            found, notes = await lanes.plan(config)
            for note in notes:
                on_note(note)
            pool = LanePool(found, config)
        else:
            await console.hold_load("search")  # the search needs the server to itself, as a sweep does

        def create() -> tuple[SearchStore, float | None]:  # reads server.json, writes the folder: a thread
            if pool is None:
                running = controller.running_config()
                controller.remember_before(running)
                return start_search(plan_search(request, config, running)), controller.expected_restart_s()
            plan = plan_search(request, config, None)  # lanes start bare
            return start_search(plan, None, lanes, len(pool.lanes)), controller.expected_restart_s()

        try:
            store, expected = await asyncio.to_thread(create)
            self.path = str(store.path)
            target = Target.from_json(store.read()["target"])
            runner = (SweepRoundRunner(controller, target, on_event=on_progress, expected_restart_s=expected)
                      if pool is None else LaneRoundRunner(pool, config, target, store, on_event=on_progress))
            engine = SearchEngine(store, runner, on_event=on_event, expected_restart_s=expected)
            return await engine.run()
        finally:
            if pool is not None:
                await pool.close(lambda closed: on_note(f"lane {closed.lane}: {closed.what}"
                                                        if isinstance(closed, LaneClosed) else str(closed)))
            elif self.restore:
                try:
                    done = await asyncio.shield(controller.shutdown())
                    if done:
                        on_note(done)
                finally:
                    console.release_load()  # the load resumes once the server is back, as after Apply


def interrupted_line(path: str | None) -> str:
    return ("search stopped before it was created" if path is None else
            f"search interrupted; continue it with: ddtune search --resume --out {home_short(path)}")

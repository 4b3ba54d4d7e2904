"""The console's knob search (the search screen, tui/screens/search.py): its inputs checked, and the run.

Not widgets. ``parse_request`` reads the screen's fields when Start is pressed: pure, and a bad field
raises UsageError naming it and the fix, so nothing starts. ``ConsoleSearch.run`` runs in the screen's
worker, and it is ``ddtune search``'s run: the same search.json (tui.commands.search plans it), the same
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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backends.knobs import ServerConfig
from backends.core import UsageError
from workloads.runs.store import home_short

if TYPE_CHECKING:
    from tui.controller import ConsoleController


@dataclass(frozen=True)
class SearchRequest:
    """What the screen asks for; the attribute names are ``ddtune search``'s options (its plan reads them)."""

    space: str
    target_context: int = 4096
    target_concurrency: int = 8
    max_tokens: int = 256
    waves: int = 4
    rungs: int = 3
    passes: int = 1
    max_restarts: int | None = None
    warmup: int | None = None
    start: str | None = None
    out: str | None = None          # the console's searches take the default folder (runs/<time>-search)
    gpus: tuple[str, ...] | None = None


def default_space(config: ServerConfig) -> str:
    """``ddtune search --help``'s example space, less any knob this config cannot set."""
    from backends.knobs.plan import known_knobs
    from workloads.search.space import EXAMPLE

    known = known_knobs(config.knob_map, config.knob_table)
    return " ".join(axis for axis in EXAMPLE.split() if axis.partition("=")[0] in known)


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

    from backends.machine.gpuset import parse_gpus
    from workloads.search.space import parse_search_space

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
        from tui.commands.search import _plan
        from workloads.search.engine import SearchEngine, SweepRoundRunner, Target
        from workloads.search.lanes import LaneRoundRunner
        from workloads.search.store import SearchStore
        from workloads.sweep.control import ManagedController
        from workloads.sweep.events import LaneClosed
        from workloads.sweep.lanes import LanePool, plan_lanes

        console, request = self.console, self.request
        config = console.config
        controller = ManagedController(config, session=console.session)
        gpus = request.gpus
        pool = None
        if gpus:
            lanes, notes = await plan_lanes(config, len(gpus), gpus)
            for note in notes:
                on_note(note)
            pool = LanePool(lanes, config)
        else:
            await console.hold_load("search")  # the search needs the server to itself, as a sweep does

        def create() -> tuple[SearchStore, float | None]:  # reads server.json, writes the folder: a thread
            meta = _plan(request, config, controller, pool is not None)
            if pool is None:
                controller.remember_before(controller.running_config())
            else:
                meta["options"] = {**meta["options"], "lanes": len(pool.lanes)}
                meta["parallel"] = {"parallel": len(pool.lanes), "gpus": list(gpus or ()), "gpus_per_server": 1}
            return SearchStore.create(meta, None), controller.expected_restart_s()

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

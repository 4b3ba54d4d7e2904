"""A sweep, assembled once: ``run_sweep(spec, on_event)`` for ``ddtune sweep``, ``ddtune ab`` and the
console's sweep screen.

The spec says what to run (a new plan, or ``resume`` the sweep in ``out``), where (the managed server,
the console's session, or parallel lanes when lane options are given or the resumed sweep ran in
lanes) and what to do with the server at the end. The front ends only parse their arguments into a
``SweepSpec``, render the events (workloads.sweep.events) and print the ``SweepOutcome``.

Order, for every caller: the plan's prompt sources are read before any server is touched; a resumed
folder is opened and checked (a serial sweep cannot resume in lanes) before lanes are planned; a new
``--out DIR`` is refused before lanes are planned (planning may stop lane servers); the folder is
written before the first restart. However the run ends, the managed server is returned to the config
it ran before (unless ``keep_server``, or a cancel while ``restore_on_cancel()`` says no) and every lane
server is stopped (unless ``keep_server``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from backends.core import ENV_KEY, UsageError
from backends.knobs import ServerConfig
from backends.machine import parse_gpus
from backends.server import ServerSession
from workloads.bench.session import load_sets
from workloads.report.compare import Report
from workloads.report.render import lossless_failed, margin_text, to_json, to_markdown
from workloads.report.text import sweep_report
from workloads.runs.store import home_short
from workloads.sweep.board import Mark
from workloads.sweep.control import ManagedController
from workloads.sweep.engine import SweepEngine
from workloads.sweep.events import SweepEvent
from workloads.sweep.lanes import LaneSweep
from workloads.sweep.plan import SweepPlan, SweepStore
from workloads.sweep.spec import PlanOptions, build_plan
from workloads.sweep.start import LaneSettings, begin_serial, check_out_folder, ran_in_lanes, resume_serial, start_sweep


def _quiet(text: str) -> None:
    pass


def _yes() -> bool:
    return True


def _nothing_held() -> AbstractAsyncContextManager[object]:
    return nullcontext()


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What a sweep and a search are both asked (keywords): lane options as given (None: not given), each
    falling back to what a resumed run recorded; what to do with the server(s) at the end; the API key;
    the console's ServerSession (its server panel follows every restart); ``say``: a line for the
    operator (a prompt record skipped, what was done with the managed server); ``note``: what planning
    the lanes found worth saying as it happens; ``hold``: what a run on the managed server holds."""

    parallel: int | None = None
    gpus: str | None = None
    gpus_per_server: int | None = None
    share_gpu: bool = False
    keep_server: bool = False
    restore_on_cancel: Callable[[], bool] = _yes  # a cancel returns the managed server to what it ran before
    api_key: str | None = None
    session: ServerSession | None = None
    say: Callable[[str], None] = _quiet
    note: Callable[[str], None] | None = None
    hold: Callable[[], AbstractAsyncContextManager[object]] = _nothing_held  # around a run on the managed
    # server, its restore included (the console pauses its coding load: the run needs the server to itself)

    def __post_init__(self) -> None:
        if self.gpus is not None:
            parse_gpus(self.gpus, self.share_gpu)  # a bad list is refused (UsageError) before anything starts

    def key(self) -> str | None:
        """The API key the run's requests carry: the one given, else $DDTUNE_API_KEY (as every command)."""
        return self.api_key or os.environ.get(ENV_KEY) or None

    def asks_lanes(self) -> bool:
        return self.share_gpu or any(v is not None for v in (self.parallel, self.gpus, self.gpus_per_server))

    def lane_settings(self, manifest: dict | None) -> LaneSettings:
        return LaneSettings.resolve(self.parallel, self.gpus, self.gpus_per_server, manifest,
                                    share_gpu=self.share_gpu)

    async def restore(self, controller: ManagedController, finished: bool) -> str | None:
        """At a run's end on the managed server: return it to the config it ran before, unless
        ``keep_server`` or a cancel while ``restore_on_cancel()`` says no; what was done (None: nothing)."""
        if self.keep_server or not (finished or self.restore_on_cancel()):
            return None
        return await asyncio.shield(controller.shutdown())


@dataclass(frozen=True)
class SweepSpec(RunSpec):
    """What to sweep: a new sweep's ``presets`` under ``plan_options`` (build_plan's, with the config's
    knob table: the plan is built here, so a bad preset, plan file or option raises UsageError before
    anything starts), or ``resume`` the sweep in ``out`` (else the latest of ``kind``); how: RunSpec's
    options. ``plan``: the plan built (or given whole)."""

    config: ServerConfig
    plan: SweepPlan | None = None
    kind: str = "sweep"
    out: str | Path | None = None
    resume: bool = False
    presets: list[str] | None = field(default=None, kw_only=True)  # None: no new plan to build
    plan_options: PlanOptions | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.presets is not None:  # built before the lane options are checked, as the commands did
            assert self.plan is None, "a SweepSpec takes presets or a plan, not both"
            object.__setattr__(self, "plan", build_plan(self.presets, knob_table=self.config.knob_table,
                                                        **(self.plan_options or {})))
        super().__post_init__()


@dataclass(frozen=True)
class SweepOutcome:
    """A sweep that ran to its end: its folder, its report and what was done with the server(s)."""

    path: Path
    report: Report
    server: str | None  # "stopped the 2 lane server(s)", "returned the server to ...": None when nothing

    @property
    def failures(self) -> int:
        return len(self.report.failures)

    @property
    def shown_path(self) -> str:
        """The folder as a human reads it (``~/...``: no user's home on screen)."""
        return home_short(self.path)

    @property
    def best(self) -> str | None:
        return self.report.overall.config if self.report.overall is not None else None

    @property
    def runner_up(self) -> str | None:
        return self.report.overall.runner_up if self.report.overall is not None else None

    @property
    def margin(self) -> str:
        return margin_text(self.report.overall.margin) if self.report.overall is not None else "-"

    @property
    def lossless_failed(self) -> str | None:
        """The loud line when a configuration changed the answers (None: none did)."""
        return lossless_failed(self.report)

    def verdict(self) -> list[Mark]:
        """The winner in a few words: ``best overall: X`` (strong), ahead of whom by how much, the command
        for the full report, and the loud line when a configuration changed the answers."""
        failed = self.lossless_failed
        loud = [Mark(f"\n{failed}", "bad")] if failed else []  # the "still correct" half, as loud as the report
        if self.best is None:
            return [Mark(f"sweep finished ({self.shown_path}); no configuration measured every cell")] + loud
        margin = f", ahead of {self.runner_up} by {self.margin}" if self.runner_up else ""
        return [Mark(f"best overall: {self.best}", "strong"),
                Mark(f"{margin}\nfull report: ddtune report {self.shown_path}")] + loud

    def markdown(self) -> str:
        return to_markdown(self.report)

    def to_json(self) -> dict:
        return {"sweep": str(self.path), "report": to_json(self.report)}


def say_skipped(plan: SweepPlan, say: Callable[[str], None]) -> None:
    """Read the plan's prompt sources before any server is touched: a bad one raises (UsageError), each
    malformed record is one line."""
    for prompts in load_sets(plan.bench)[0].values():
        for line in prompts.skipped:
            say(f"prompts: {line}")
        if prompts.skipped:
            say(f"prompts: {prompts.name}: {len(prompts.records)} read, {len(prompts.skipped)} skipped")


async def run_sweep(spec: SweepSpec, on_event: Callable[[SweepEvent], None]) -> SweepOutcome:
    """Create or resume the sweep, run it to its end, restore the server(s), read its report. A cancel
    propagates (the sweep is recorded interrupted: ``resume`` continues it); its folder is in the first
    event, SweepStarted."""
    if spec.plan is not None:
        await asyncio.to_thread(say_skipped, spec.plan, spec.say)
    resumed = SweepStore.open(spec.out, spec.kind) if spec.resume else None
    manifest = resumed.read() if resumed is not None else None
    if spec.asks_lanes() or ran_in_lanes(manifest):
        path, server = await _in_lanes(spec, resumed, manifest, on_event)
    else:
        path, server = await _serial(spec, on_event)
    report = await asyncio.to_thread(sweep_report, path)
    return SweepOutcome(path, report, server)


async def _serial(spec: SweepSpec, on_event: Callable[[SweepEvent], None]) -> tuple[Path, str | None]:
    async with spec.hold():
        return await _serial_held(spec, on_event)


async def _serial_held(spec: SweepSpec, on_event: Callable[[SweepEvent], None]) -> tuple[Path, str | None]:
    controller = ManagedController(spec.config, session=spec.session)
    if spec.resume:
        store = await asyncio.to_thread(resume_serial, controller, spec.out, spec.kind)
        plan = store.plan()
    else:
        assert spec.plan is not None, "a new sweep needs a plan"
        plan = spec.plan  # begin_serial records what the server ran before (reads server.json)
        store = await asyncio.to_thread(lambda: begin_serial(plan, controller, out=spec.out, kind=spec.kind))
    engine = SweepEngine(plan, store, controller, api_key=spec.key(), on_event=on_event,
                         expected_restart_s=controller.expected_restart_s())
    finished, done = False, None
    try:
        await engine.run()
        finished = True
    finally:
        if done := await spec.restore(controller, finished):
            spec.say(f"sweep: {done}")
    return store.path, done


async def _in_lanes(spec: SweepSpec, resumed: SweepStore | None, manifest: dict | None,
                    on_event: Callable[[SweepEvent], None]) -> tuple[Path, str | None]:
    if resumed is not None and not ran_in_lanes(manifest):
        raise UsageError(f"--resume --out {resumed.path}: that sweep ran on one server, not in parallel lanes",
                         hint="resume it without --parallel, --gpus and --gpus-per-server")
    settings = spec.lane_settings(manifest)
    plan = spec.plan if spec.plan is not None else resumed.plan() if resumed is not None else None
    assert plan is not None, "a new sweep needs a plan"
    if resumed is None:
        check_out_folder(spec.out)  # refused before lanes are planned
    lanes, notes = await settings.plan(spec.config, note=spec.note)
    store = resumed if resumed is not None else start_sweep(plan, spec.config, None, lanes=settings, out=spec.out,
                                                           kind=spec.kind)
    await LaneSweep(plan, store, lanes, spec.config, api_key=spec.key(), on_event=on_event,
                    keep_server=spec.keep_server, notes=tuple(notes)).run()
    return store.path, None if spec.keep_server else f"stopped the {len(lanes)} lane server(s)"

"""The console's quick sweep (the sweep screen, tui/screens/sweep.py): the run, and its verdict line.

``run_console_sweep`` runs in the screen's worker, and it is ``ddtune sweep``'s run: the same
SweepEngine on the console's own ServerSession (ManagedController(config, session=...), so the server
panel follows every restart live), or with GPUs one lane per GPU beside it (workloads.sweep.lanes, as
``--parallel``; the console's server is left alone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.controller import ConsoleController


async def run_console_sweep(console: ConsoleController, presets: list[str], baseline: bool, contexts: list[int],
                            concurrency: list[int], max_tokens: int, on_event: Callable[[object], None],
                            gpus: tuple[str, ...] | None = None) -> tuple[str, str, str | None]:
    """A quick sweep on the console's session, or with ``gpus`` one lane per GPU beside it.
    Returns (sweep folder, one-line verdict, what was done with the server at the end)."""
    from workloads.runs.provenance import host_provenance
    from workloads.sweep.control import ManagedController
    from workloads.sweep.engine import SweepEngine
    from workloads.sweep.plan import SweepStore
    from workloads.sweep.spec import build_plan

    config = console.config
    plan = build_plan(presets, baseline=baseline, contexts=contexts, concurrency=concurrency,
                      max_tokens=max_tokens, run_eval=False, knob_table=config.knob_table)
    if gpus:
        from workloads.sweep.lanes import LaneSweep, plan_lanes

        lanes, notes = await plan_lanes(config, len(gpus), gpus)
        store = SweepStore.create(plan, {"config_source": config.source, "backend": config.backend,
                                         "model": config.model, "host": host_provenance(), "server_before": None,
                                         "parallel": {"parallel": len(gpus), "gpus": list(gpus),
                                                      "gpus_per_server": 1}}, None, "sweep")
        await LaneSweep(plan, store, lanes, config, on_event=on_event, notes=tuple(notes)).run()
        verdict = await asyncio.to_thread(sweep_verdict, str(store.path))
        return str(store.path), verdict, f"stopped the {len(lanes)} lane server(s)"
    await console.hold_load("sweep")  # the sweep needs the server to itself; the load resumes after it
    try:
        store = SweepStore.create(plan, {"config_source": config.source, "backend": config.backend,
                                         "model": config.model, "host": host_provenance()}, None, "sweep")
        sweep = ManagedController(config, session=console.session)
        engine = SweepEngine(plan, store, sweep, on_event=on_event, expected_restart_s=sweep.expected_restart_s())
        await engine.run()
        verdict = await asyncio.to_thread(sweep_verdict, str(store.path))
        done = await sweep.shutdown()  # as `ddtune sweep` does: back to the config it ran before
    finally:
        console.release_load()
    return str(store.path), verdict, done


def sweep_verdict(path: str) -> str:
    """The sweep's winner in one line, as markup whose data is escaped (reads the sweep's files: call
    it from a thread)."""
    from pathlib import Path

    from rich.markup import escape

    from workloads.report.compare import build_report
    from workloads.report.render import lossless_failed, margin_text
    from workloads.report.inputs import read_sweep
    from workloads.runs.store import home_short

    report = build_report(read_sweep(Path(path)))
    failed = lossless_failed(report)
    loud = f"\n[b red]{escape(failed)}[/]" if failed else ""  # the "still correct" half, as loud as the report
    best, shown = report.overall, escape(home_short(path))  # ~/...: no user's home on screen
    if best is None:
        return f"sweep finished ({shown}); no configuration measured every cell{loud}"
    margin = f", ahead of {escape(best.runner_up)} by {escape(margin_text(best.margin))}" if best.runner_up else ""
    return f"[b]best overall: {escape(best.config)}[/b]{margin}\nfull report: ddtune report {shown}{loud}"

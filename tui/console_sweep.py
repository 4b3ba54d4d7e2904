"""The console's quick sweep (the sweep screen, tui/screens/sweep.py): the run, and its verdict line.

``run_console_sweep`` runs in the screen's worker, and it is ``ddtune sweep``'s run: the same
SweepEngine on the console's own ServerSession (ManagedController(config, session=...), so the server
panel follows every restart live), or with GPUs one lane per GPU beside it (workloads.sweep's
LaneSweep, as ``--parallel``; the console's server is left alone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tui.controller import ConsoleController
from workloads.sweep import (LaneSettings, LaneSweep, ManagedController, SweepEngine, begin_serial, build_plan,
                             start_sweep)


async def run_console_sweep(console: ConsoleController, presets: list[str], baseline: bool, contexts: list[int],
                            concurrency: list[int], max_tokens: int, on_event: Callable[[object], None],
                            gpus: tuple[str, ...] | None = None) -> tuple[str, str, str | None]:
    """A quick sweep on the console's session, or with ``gpus`` one lane per GPU beside it.
    Returns (sweep folder, one-line verdict, what was done with the server at the end)."""
    config = console.config
    plan = build_plan(presets, baseline=baseline, contexts=contexts, concurrency=concurrency,
                      max_tokens=max_tokens, run_eval=False, knob_table=config.knob_table)
    if gpus:
        settings = LaneSettings.one_per_gpu(gpus)
        lanes, notes = await settings.plan(config)
        store = start_sweep(plan, config, None, lanes=settings)
        await LaneSweep(plan, store, lanes, config, on_event=on_event, notes=tuple(notes)).run()
        verdict = await asyncio.to_thread(sweep_verdict, str(store.path))
        return str(store.path), verdict, f"stopped the {len(lanes)} lane server(s)"
    await console.hold_load("sweep")  # the sweep needs the server to itself; the load resumes after it
    try:
        sweep = ManagedController(config, session=console.session)
        store = begin_serial(plan, sweep)  # as `ddtune sweep`: it records what the server ran before
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
    from rich.markup import escape

    from workloads.report import home_short, lossless_failed, margin_text, sweep_report

    report = sweep_report(path)
    failed = lossless_failed(report)
    loud = f"\n[b red]{escape(failed)}[/]" if failed else ""  # the "still correct" half, as loud as the report
    best, shown = report.overall, escape(home_short(path))  # ~/...: no user's home on screen
    if best is None:
        return f"sweep finished ({shown}); no configuration measured every cell{loud}"
    margin = f", ahead of {escape(best.runner_up)} by {escape(margin_text(best.margin))}" if best.runner_up else ""
    return f"[b]best overall: {escape(best.config)}[/b]{margin}\nfull report: ddtune report {shown}{loud}"

"""The console's quick sweep (the sweep screen, tui/screens/sweep.py): the run, its verdict line, and the
boards' marked text as styles (the sweep and search screens).

``run_console_sweep`` runs in the screen's worker, and it is ``ddtune sweep``'s run
(workloads.sweep.run_sweep): on the console's own ServerSession (so the server panel follows every
restart live), or with GPUs one lane per GPU beside it (as ``--parallel``; the console's server is
left alone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.controller import ConsoleController
from workloads.sweep import SweepEvent, SweepOutcome, SweepSpec, build_plan, run_sweep

if TYPE_CHECKING:
    from rich.text import Text


def sweep_spec(console: ConsoleController, presets: list[str], baseline: bool, contexts: list[int],
               concurrency: list[int], max_tokens: int, gpus: str | None = None) -> SweepSpec:
    """The screen's quick sweep: on the console's session, or with ``gpus`` one lane per GPU beside it.
    A bad GPU list or preset raises (UsageError) here, before anything starts."""
    config = console.config
    plan = build_plan(presets, baseline=baseline, contexts=contexts, concurrency=concurrency,
                      max_tokens=max_tokens, run_eval=False, knob_table=config.knob_table)
    if gpus:
        return SweepSpec(config, plan, gpus=gpus)
    return SweepSpec(config, plan, session=console.session, restore_on_cancel=lambda: False)


async def run_console_sweep(console: ConsoleController, spec: SweepSpec,
                            on_event: Callable[[SweepEvent], None]) -> SweepOutcome:
    """Run the screen's sweep. Leaving the screen cancels it and leaves the console's server as it is."""
    if spec.asks_lanes():
        return await run_sweep(spec, on_event)
    await console.hold_load("sweep")  # the sweep needs the server to itself; the load resumes after it
    try:
        return await run_sweep(spec, on_event)
    finally:
        console.release_load()


def sweep_verdict(outcome: SweepOutcome) -> str:
    """The sweep's winner in one line, as markup whose data is escaped."""
    from rich.markup import escape

    failed = outcome.lossless_failed
    loud = f"\n[b red]{escape(failed)}[/]" if failed else ""  # the "still correct" half, as loud as the report
    shown = escape(outcome.shown_path)  # ~/...: no user's home on screen
    if outcome.best is None:
        return f"sweep finished ({shown}); no configuration measured every cell{loud}"
    margin = f", ahead of {escape(outcome.runner_up)} by {escape(outcome.margin)}" if outcome.runner_up else ""
    return f"[b]best overall: {escape(outcome.best)}[/b]{margin}\nfull report: ddtune report {shown}{loud}"


TONES = {"strong": "bold", "good": "green", "win": "bold green", "bad": "bold red", "warn": "yellow",
         "cmd": "bold cyan"}  # the tone of a board's Mark (workloads.sweep.board) as a style


def marked(marks: list) -> Text:
    """Marked text (a SweepBoard's or SearchBoard's Marks) as one Text: styles, never markup. One mark is a
    Text of its style (a table cell), several are spans."""
    from rich.text import Text

    if len(marks) == 1:
        return Text(marks[0].text, style=TONES.get(marks[0].tone, ""))
    out = Text()
    for mark in marks:
        out.append(mark.text, style=TONES.get(mark.tone, ""))
    return out

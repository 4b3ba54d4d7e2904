"""The console's quick sweep (the sweep screen, tui/screens/sweep.py): its spec, what it holds on the
console's server, and the boards' marked text as styles (the sweep and search screens).

The screen's worker runs ``ddtune sweep``'s use case (workloads.sweep.run_sweep) on this spec: on the
console's own ServerSession (so the server panel follows every restart live, and the coding load pauses
until the server is back), or with GPUs one lane per GPU beside it (as ``--parallel``; the console's
server is left alone). Leaving the screen cancels it and leaves the console's server as it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

from tui.controller import ConsoleController
from workloads.sweep import SweepSpec

if TYPE_CHECKING:
    from rich.text import Text


def holding_load(console: ConsoleController, what: str) -> Callable[[], AbstractAsyncContextManager[None]]:
    """A sweep or search (``what``) on the console's server: its coding load paused until the run ends
    (the server back where it was), as after Apply."""
    @asynccontextmanager
    async def hold() -> AsyncIterator[None]:
        await console.hold_load(what)
        try:
            yield
        finally:
            console.release_load()
    return hold


def sweep_spec(console: ConsoleController, presets: list[str], baseline: bool, contexts: list[int],
               concurrency: list[int], max_tokens: int, gpus: str | None = None) -> SweepSpec:
    """The screen's quick sweep: on the console's session, or with ``gpus`` one lane per GPU beside it.
    A bad GPU list or preset raises (UsageError) here, before anything starts. On the console's server
    a cancel leaves it as it is and its coding load waits (in lanes neither applies)."""
    return SweepSpec(console.config, presets=presets, gpus=gpus or None,
                     plan_options={"baseline": baseline, "contexts": contexts, "concurrency": concurrency,
                                   "max_tokens": max_tokens, "run_eval": False},
                     session=None if gpus else console.session, restore_on_cancel=lambda: False,
                     hold=holding_load(console, "sweep"))


TONES = {"strong": "bold", "good": "green", "win": "bold green", "bad": "bold red", "warn": "yellow",
         "cmd": "bold cyan"}  # the tone of a board's Mark (workloads.sweep.board) as a style


def marked(marks: list) -> Text:
    """Marked text (a board's Marks, a sweep's verdict) as one Text: styles, never markup. One mark is a
    Text of its style (a table cell), several are spans."""
    from rich.text import Text

    if len(marks) == 1:
        return Text(marks[0].text, style=TONES.get(marks[0].tone, ""))
    out = Text()
    for mark in marks:
        out.append(mark.text, style=TONES.get(mark.tone, ""))
    return out

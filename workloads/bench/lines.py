"""The text a bench's events make on stderr (``ddtune bench``; the engine prints nothing): on a terminal
one progress bar redrawn in place (``\\r``), otherwise one line per finished cell; a prompt source's
skipped records, one line each.

Every event of the union is matched (``assert_never``): a new bench event fails the type check here
until it says what it shows.
"""

from __future__ import annotations

from typing import assert_never

from workloads.bench.bench_case import BenchEvent, SetSkipped
from workloads.bench.matrix import BenchProgress


def eta_text(eta_s: float | None) -> str:
    """``ETA 40 s`` / ``ETA 3.5 min``, as the sweep prints it; before a cell has finished there is
    nothing measured to go by."""
    if eta_s is None:
        return "ETA after the first cell"
    return f"ETA {eta_s / 60:.1f} min" if eta_s >= 120 else f"ETA {eta_s:.0f} s"


class BenchLines:
    """What to write for each event (``""``: nothing); ``tty``: the stream is a terminal (a bar of
    ``width``); ``close()``: what ends the output (the bar's line, once one was drawn)."""

    def __init__(self, tty: bool, width: int = 24) -> None:
        self.tty = tty
        self.width = width
        self.drawn = False

    def __call__(self, event: BenchEvent) -> str:
        match event:
            case BenchProgress():
                return self._bar(event) if self.tty else self._cell_line(event)
            case SetSkipped():
                return event.lines()
            case _:
                assert_never(event)

    def close(self) -> str:
        return "\n" if self.drawn else ""

    @staticmethod
    def _cell_line(p: BenchProgress) -> str:
        if p.phase != "done":
            return ""
        last = p.cells_done + 1 >= p.cells_total
        what = f"{p.prompts}, " if p.prompts else ""
        rate = f", rate {p.rate:g}/s" if p.rate is not None else ""
        return (f"cell {p.cells_done + 1}/{p.cells_total} done: {what}context {p.context}, "
                f"concurrency {p.concurrency}{rate}, {p.requests_total} requests"
                f"{'' if last else '; ' + eta_text(p.eta_s)}\n")

    def _bar(self, p: BenchProgress) -> str:
        frac = (p.cells_done + (p.requests_done / p.requests_total if p.requests_total else 0)) / max(1, p.cells_total)
        filled = int(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        eta = f"  {eta_text(p.eta_s)}" if p.eta_s is not None else ""
        what = f"  {p.prompts.rsplit('/', 1)[-1][:24]}" if p.prompts else ""
        rate = f"  {p.rate:g}/s" if p.rate is not None else ""
        self.drawn = True
        return (f"\r[{bar}] {frac * 100:5.1f}%  cell {p.cells_done + 1}/{p.cells_total}{what}"
                f"  ctx {p.context}  c {p.concurrency}{rate}  {p.phase} {p.requests_done}/{p.requests_total}"
                f"{eta}   ")

"""What people see of a sweep's events, one call per event: ``view(event)`` is the sweep screen's
``Change`` (its tables, status line and notices: board.py) carrying the lines ``ddtune sweep`` and
``ddtune ab`` write to stderr (``change.lines``: lines.py). The console draws the change, the commands
print its lines; each front end renders what it needs of the same answer."""

from __future__ import annotations

from collections.abc import Callable

from workloads.sweep.board import Change, SweepBoard, eta_cell
from workloads.sweep.events import SweepEvent
from workloads.sweep.lines import SweepLines


class SweepView(SweepBoard):
    """A sweep's board and its log lines as its events come; ``path``: the sweep's folder once known.
    ``duration``: how an ETA on the board reads (the console's own format)."""

    def __init__(self, duration: Callable[[float | None], str] = eta_cell) -> None:
        super().__init__(duration)
        self.log = SweepLines()

    @property
    def path(self) -> str | None:
        return self.log.path

    def __call__(self, event: SweepEvent) -> Change:
        change = super().__call__(event)
        change.lines = self.log(event)
        return change

"""What ``ddtune sweep``, ``ddtune ab`` and ``ddtune search`` write to stderr while they run: the lines
workloads makes of each event (workloads.sweep.SweepLines, workloads.search.SearchLines), as they come."""

from __future__ import annotations

import sys
from typing import Generic, Protocol, TypeVar

E = TypeVar("E", contravariant=True)


class Lines(Protocol[E]):
    path: str | None  # the run's folder, once it started

    def __call__(self, event: E) -> list[str]: ...


class LinePrinter(Generic[E]):
    """The run's lines on ``stream``; ``path``: its folder once started."""

    def __init__(self, lines: Lines[E], stream=sys.stderr) -> None:
        self.stream = stream
        self.lines = lines

    @property
    def path(self) -> str | None:
        return self.lines.path

    def __call__(self, event: E) -> None:
        for line in self.lines(event):
            self.stream.write(line + "\n")
        self.stream.flush()


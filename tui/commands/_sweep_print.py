"""What ``ddtune sweep``, ``ddtune ab`` and ``ddtune search`` write to stderr while they run: the lines
workloads makes of each event (its ``lines``, as workloads.sweep.SweepView and workloads.search.SearchView
say them), as they come."""

from __future__ import annotations

import sys
from typing import Generic, Protocol, TypeVar

E = TypeVar("E", contravariant=True)


class Shown(Protocol):
    lines: list[str]


class View(Protocol[E]):
    @property
    def path(self) -> str | None: ...  # the run's folder, once it started

    def __call__(self, event: E) -> Shown: ...


class LinePrinter(Generic[E]):
    """The run's lines on ``stream``; ``path``: its folder once started."""

    def __init__(self, view: View[E], stream=sys.stderr) -> None:
        self.stream = stream
        self.view = view

    @property
    def path(self) -> str | None:
        return self.view.path

    def __call__(self, event: E) -> None:
        for line in self.view(event).lines:
            self.stream.write(line + "\n")
        self.stream.flush()


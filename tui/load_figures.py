"""The coding load's figures on their way to the screen: plot points, markers and the live A/B.

The controller hands this every event of its load worker and every config change; it turns them
into the main screen's messages and keeps the A/B per configuration (workloads/live/ab.py, where the
statistics are computed). The A/B goes to the strip on the app's one tick, and only when it changed.
Nothing here does I/O or touches a widget.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from textual.message import Message

from backends.knobs import KnobValue
from tui import messages as m
from workloads.live import ConfigFigures, LiveAB, LoadProcEvent


class LoadFigures:
    def __init__(self, knobs: Mapping[str, KnobValue], post: Callable[[Message], object]) -> None:
        self.ab = LiveAB(knobs)
        self._post = post
        self._shown = -1  # the A/B version the strip shows
        self.plotted = False  # a point is on the plots (the load's, or the server's decode lines'): a change is marked

    def on_load_event(self, event: LoadProcEvent) -> None:
        # The A/B takes each event (workloads/live/ab.py); a tick comes back once a second of the
        # load is in (a rate over the first moments after a (re)start reads the requests' time to
        # first token, not the server's pace): the plots start there.
        s = self.ab.observe(event)
        if s is not None:
            roll, one = s.window_roll, s.window_1s
            self.plotted = True
            self._post(m.LoadWindowUpdated(time.monotonic(), roll.tokens_per_s, roll.acceptance, s.in_flight,
                                           one.tokens_per_s, roll.approx or one.approx, roll.window_s,
                                           roll.acceptance_source))

    def new_source(self, knobs: Mapping[str, KnobValue], source: str) -> None:
        """Another prompt source: its figures start afresh (an A/B compares configurations on one
        source: acceptance is a property of the prompts), and the screen names it."""
        self.ab = LiveAB(knobs)
        self._shown = -1
        self._post(m.LoadSourceChanged(source))
        self.tick()

    def config_changed(self, knobs: Mapping[str, KnobValue], label: str) -> None:
        """A restart to other knobs: a labelled marker on both plots, a new configuration in the A/B.
        A change before anything was plotted or measured (a re-attached server tuned before this
        session) only names what runs: no marker for a change the plots never saw."""
        if self.ab.mark(knobs, label) or self.plotted:
            self._post(m.ConfigMarked(time.monotonic(), label))

    def pin(self) -> ConfigFigures:
        """Pin the current configuration as the A/B's baseline; the strip shows it at once."""
        figures = self.ab.pin()
        self.tick()
        return figures

    def tick(self) -> None:
        if self.ab.version != self._shown:
            self._shown = self.ab.version
            self._post(m.ComparisonChanged(self.ab.comparison()))

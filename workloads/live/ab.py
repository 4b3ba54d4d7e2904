"""The live load's A/B, one server configuration after another: the figures the console's strip shows. Pure.

Each configuration's share of the load runs from the load's resume on it (after the restart that
brought it, whose marker the plots draw) to the next pause. Per configuration:

- **tok/s**: the mean of its closed windows (workloads/live/windows.py; the first window after each
  start or resume holds the ramp-up and is left out), with a 95% t-interval over those windows;
- **acceptance**: the mean of its requests' own acceptance (tokens / verify steps), with a 95% interval;
  where its requests carry none (chat before sglang 0.5.19), the mean of its closed windows' acceptance
  from the server's counters, else its log's decode lines (``acceptance_source`` ``counters``/``log``:
  the server's figure over each window, not a per-request mean);
- **requests** that finished, and how many of the graded answers passed.

``comparison()`` sets the current configuration against a reference: the baseline pinned with
``pin()`` (the console's ``b``), else the configuration before it, as ratios with 95% intervals
(workloads/stats/estimate.py: delta method on the log scale), e.g. ``+12.4% tok/s [8.1, 16.7]``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from typing import assert_never

from backends.knobs import KnobValue, knob_text
from workloads.live.events import (LoadPaused, LoadProcEvent, LoadResumed, LoadStarted, LoadStats, LoadStopped,
                                   RequestDone, StatsUpdated)
from workloads.live.windows import Window
from workloads.stats.estimate import Estimate, Ratio, from_repeats, ratio

MAX_CONFIGS = 16   # configurations kept (a pinned baseline is kept beyond that)
MAX_SAMPLES = 2000  # windows and requests kept per configuration (the latest)
MIN_MEASURED_S = 0.9  # a rate over less than this after a (re)start reads the requests' TTFT, not the pace


def estimate_text(e: Estimate | None, fmt: str) -> str:
    """``412 ±18``: the mean and its 95% half-width; ``-`` without an estimate."""
    if e is None:
        return "-"
    if e.half_width is None:
        return format(e.mean, fmt)
    return f"{format(e.mean, fmt)} ±{format(e.half_width, fmt)}"


@dataclass(frozen=True)
class Change:
    """A ratio as the strip shows it: ``+12.4% [8.1, 16.7]`` (``-`` without one), and its trend: 1 up,
    -1 down, 0 within noise (no colour claims a winner)."""

    text: str
    trend: int

    @classmethod
    def of(cls, r: Ratio | None) -> Change:
        if r is None:
            return cls("-", 0)
        return cls(change_pct(r) or "-", (1 if r.value > 1 else -1) if r.significant else 0)


@dataclass(frozen=True)
class ConfigFigures:
    number: int                       # 1, 2, ... in the order the configurations ran under the load
    knobs: dict[str, KnobValue]
    marker: str | None                # the change that brought it ("window 2048 -> 1024"); None for the first
    tok_s: Estimate | None
    acceptance: Estimate | None
    windows: int                      # closed windows averaged (ramp-up windows left out)
    requests: int                     # requests that finished (failed and cancelled ones are not counted)
    passed: int
    graded: int
    approx: bool                      # some of its tokens were counted by chunks
    acceptance_source: str | None = None  # "request", "counters" or "log" (module docstring); None: none

    @property
    def name(self) -> str:
        """Its knobs that are set (``window=2048``); ``config N`` when none is."""
        shown = " ".join(f"{k}={knob_text(v)}" for k, v in self.knobs.items() if v is not None)
        return shown or f"config {self.number}"

    def tok_text(self) -> str:
        return estimate_text(self.tok_s, ".0f")

    def accept_text(self) -> str:
        """Its acceptance, and where it came from when that was not its requests' own (sglang before
        0.5.19 puts none on chat): the server's ``counters`` or ``log`` lines, over its windows."""
        text = estimate_text(self.acceptance, ".2f")
        return f"{text} ({self.acceptance_source})" if self.acceptance_source in ("counters", "log") else text


@dataclass(frozen=True)
class Comparison:
    current: ConfigFigures
    reference: ConfigFigures | None   # the pinned baseline, else the configuration before; None: nothing to
                                      # compare with (the first, or the current one is the pinned baseline)
    pinned: bool                      # a baseline is pinned (with b): the reference, or the current one
    tok_s: Ratio | None               # current / reference
    acceptance: Ratio | None

    def names(self) -> tuple[str, str]:
        """What tells the current configuration and the reference apart (``config_names``)."""
        return config_names(self.current.knobs, self.reference.knobs) if self.reference else (self.current.name, "")

    @property
    def tok_change(self) -> Change:
        return Change.of(self.tok_s)

    @property
    def accept_change(self) -> Change:
        return Change.of(self.acceptance)


@dataclass
class _Config:
    number: int
    knobs: dict[str, KnobValue]
    marker: str | None
    tok_s: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    acceptance: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    server_acceptance: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))  # windows'
    server_source: str | None = None   # where the windows' acceptance came from: counters or log
    requests: int = 0
    passed: int = 0
    graded: int = 0
    approx: bool = False

    def figures(self) -> ConfigFigures:
        source: str | None = "request"
        if self.acceptance:
            acceptance = list(self.acceptance)
        else:
            acceptance, source = list(self.server_acceptance), self.server_source
        return ConfigFigures(self.number, dict(self.knobs), self.marker, from_repeats(list(self.tok_s)),
                             from_repeats(acceptance), len(self.tok_s), self.requests, self.passed,
                             self.graded, self.approx, source if acceptance else None)


def config_names(a: Mapping[str, KnobValue], b: Mapping[str, KnobValue]) -> tuple[str, str]:
    """What tells two configurations apart, each as ``knob=value`` (``window=1024``), from the
    knobs that differ; ``""`` for both when none does."""
    keys = [k for k in (*a, *(k for k in b if k not in a)) if a.get(k) != b.get(k)]
    return (" ".join(f"{k}={knob_text(a.get(k))}" for k in keys), " ".join(f"{k}={knob_text(b.get(k))}" for k in keys))


def change_pct(r: Ratio | None) -> str | None:
    """``+12.4% [8.1, 16.7]``: the change with its 95% interval, in percent; None without a ratio."""
    if r is None:
        return None
    text = f"{(r.value - 1) * 100:+.1f}%"
    if r.lo is None or r.hi is None:
        return text
    return f"{text} [{(r.lo - 1) * 100:.1f}, {(r.hi - 1) * 100:.1f}]"


class LiveAB:
    """Fed by the console's controller: ``mark`` on a config change, ``pause``/``resume`` with the
    load, each closed window and each finished request. ``version`` moves on every change, so a
    reader redraws only when something did."""

    def __init__(self, knobs: Mapping[str, KnobValue]) -> None:
        self._configs: deque[_Config] = deque(maxlen=MAX_CONFIGS)
        self._configs.append(_Config(1, dict(knobs), None))
        self._pending: _Config | None = None
        self._pinned: _Config | None = None
        self._paused = True          # until the load starts
        self._last_window = -1
        self.version = 0

    @property
    def current(self) -> _Config:
        return self._configs[-1]

    def mark(self, knobs: Mapping[str, KnobValue], label: str) -> bool:
        """The server's knobs changed. The new configuration's share begins when the load next
        resumes (on the new server): what arrives before that is still the old one's. True when it
        is a new configuration to compare; False when nothing was measured on the old one (its
        knobs are taken in place) or the knobs are the same."""
        current = self.current
        if dict(knobs) == current.knobs:
            self._pending = None
            return False
        if not current.tok_s and not current.requests and current is not self._pinned:
            current.knobs = dict(knobs)  # nothing was measured on it: no configuration to compare with
            self._pending = None
            self.version += 1
            return False
        self._pending = _Config(current.number + 1, dict(knobs), label)
        return True

    def observe(self, event: LoadProcEvent) -> LoadStats | None:
        """One event of the load: the A/B takes what it needs of it; a tick worth plotting (the load
        runs, and its 1 s rate covers a second at least) comes back."""
        match event:
            case StatsUpdated(stats):
                self.add_window(stats.last_window)
                if not stats.paused and stats.window_1s.measured_s >= MIN_MEASURED_S:
                    return stats
            case RequestDone(ok=ok, verdict=verdict, accept_len=accept_len):
                self.add_request(ok, verdict, accept_len)
            case LoadStarted() | LoadResumed():
                self.resume()
            case LoadPaused() | LoadStopped():
                self.pause()
            case _:
                assert_never(event)
        return None

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        """The load (re)started: a pending configuration begins now; windows are counted afresh."""
        self._paused = False
        self._last_window = -1   # a new load process numbers its windows from 0 again
        if self._pending is not None:
            self._configs.append(self._pending)
            self._pending = None
            self.version += 1

    def add_window(self, window: Window | None) -> None:
        if window is None or self._paused or window.index <= self._last_window:
            return
        self._last_window = window.index
        if window.first:
            return
        self.current.tok_s.append(window.tok_s)
        if window.acceptance is not None and window.acceptance_source in ("counters", "log"):
            self.current.server_acceptance.append(window.acceptance)
            self.current.server_source = window.acceptance_source
        self.current.approx = self.current.approx or window.approx
        self.version += 1

    def add_request(self, ok: bool, verdict: str, accept_len: float | None) -> None:
        if not ok:
            return
        config = self.current
        config.requests += 1
        if accept_len is not None:
            config.acceptance.append(accept_len)
        if verdict != "-":  # "-": not graded; a finished request's other verdicts are grades
            config.graded += 1
            config.passed += verdict == "pass"
        self.version += 1

    def pin(self) -> ConfigFigures:
        """Pin the current configuration as the baseline every later one is compared with."""
        self._pinned = self.current
        self.version += 1
        return self._pinned.figures()

    def configs(self) -> tuple[ConfigFigures, ...]:
        return tuple(c.figures() for c in self._configs)

    def comparison(self) -> Comparison:
        current = self.current
        reference: _Config | None
        if self._pinned is not None:
            reference = self._pinned if self._pinned is not current else None
        else:
            reference = self._configs[-2] if len(self._configs) > 1 else None
        now = current.figures()
        ref = reference.figures() if reference is not None else None
        return Comparison(now, ref, self._pinned is not None, ratio(now.tok_s, ref.tok_s) if ref else None,
                          ratio(now.acceptance, ref.acceptance) if ref else None)

"""Statistics for request results: percentiles, distributions and sliding windows. Pure."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


def percentile(values: list[float] | tuple[float, ...], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), ``q`` in 0..100; None for no values."""
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return float(data[0])
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))


@dataclass(frozen=True)
class Distribution:
    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None

    def to_json(self) -> dict:
        return {"count": self.count, "mean": self.mean, "p50": self.p50, "p95": self.p95, "p99": self.p99,
                "max": self.max}


def distribution(values: list[float] | tuple[float, ...]) -> Distribution:
    values = [float(v) for v in values if v is not None]
    if not values:
        return Distribution(0, None, None, None, None, None)
    return Distribution(len(values), sum(values) / len(values), percentile(values, 50), percentile(values, 95),
                        percentile(values, 99), max(values))


def cell_acceptance(cell: dict) -> float | None:
    """The acceptance that comparisons use: the cell's ``total`` (older cells: the per-request mean)."""
    acc = cell.get("acceptance")
    if not isinstance(acc, dict):
        return None
    return acc["total"] if acc.get("total") is not None else acc.get("mean")


@dataclass(frozen=True)
class WindowStats:
    """Rates over one sliding window ending at ``now``."""

    window_s: float
    tokens_per_s: float
    acceptance: float | None  # accepted tokens per verify step over requests finished in the window
    finished: int


class SlidingWindow:
    """Tokens as they stream, and finished requests' (tokens, verify steps), for windowed rates.

    Feed it timestamps from one monotonic clock; ``stats(now, window)`` reads any window up to
    ``horizon_s``. Memory stays bounded: entries older than the horizon are dropped.
    """

    def __init__(self, horizon_s: float = 10.0) -> None:
        self.horizon_s = horizon_s
        self._tokens: deque[tuple[float, int]] = deque()
        self._finished: deque[tuple[float, int, int | None]] = deque()

    def add_tokens(self, t: float, n: int) -> None:
        if n:
            self._tokens.append((t, n))

    def add_finished(self, t: float, tokens: int, verify_ct: int | None) -> None:
        self._finished.append((t, tokens, verify_ct))

    def _trim(self, now: float) -> None:
        edge = now - self.horizon_s
        while self._tokens and self._tokens[0][0] < edge:
            self._tokens.popleft()
        while self._finished and self._finished[0][0] < edge:
            self._finished.popleft()

    def stats(self, now: float, window_s: float) -> WindowStats:
        self._trim(now)
        edge = now - window_s
        tokens = sum(n for t, n in self._tokens if t >= edge)
        done = [(n, v) for t, n, v in self._finished if t >= edge]
        spec = [(n, v) for n, v in done if v]
        acceptance = sum(n for n, _ in spec) / sum(v for _, v in spec) if spec else None
        return WindowStats(window_s, tokens / window_s, acceptance, len(done))

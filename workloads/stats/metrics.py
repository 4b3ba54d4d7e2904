"""Statistics for request results: percentiles and distributions. Pure. (The live load's windows:
workloads/live/windows.py.)"""

from __future__ import annotations

import math
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


def cell_acceptance_source(cell: dict) -> str | None:
    """Where a cell's acceptance came from (``request``, ``counters``, ``log``: workloads/bench/matrix.py);
    a cell written before sources were named had the requests' own. None without an acceptance."""
    acc = cell.get("acceptance")
    if not isinstance(acc, dict) or (acc.get("total") is None and acc.get("mean") is None):
        return None
    source = acc.get("source")
    return source if isinstance(source, str) and source else "request"


def cell_acceptance(cell: dict) -> float | None:
    """The acceptance that comparisons use: the cell's ``total`` (older cells: the per-request mean)."""
    acc = cell.get("acceptance")
    if not isinstance(acc, dict):
        return None
    return acc["total"] if acc.get("total") is not None else acc.get("mean")

"""Estimates with confidence intervals, and ratios of them. Pure; no numpy or scipy.

Two sources of uncertainty, both reduced to a mean and a standard error:
- repeats: one value per repeat (the config ran N times, interleaved); t-interval over the repeats;
- per-request variation (a single run): the relative standard error of per-request samples
  (e.g. per-request throughput) scaled onto the aggregate value, with a t-interval over requests.
A ratio of two independent estimates gets its interval by the delta method on the log scale:
``rel_se(a/b) = sqrt(rel_se(a)^2 + rel_se(b)^2)``.

Values read back from disk can be any finite number (1.7e308 beside 5e-324): a figure that such
arithmetic takes past a float (a mean of 1.7e308 and 1.7e308, a ratio over 5e-324) is no figure, so
it is left out (None; an interval that overflows: no interval), never shown or written as inf or nan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# two-sided 95% Student t quantiles by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t95(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (conservative between table rows)."""
    if df < 1:
        return math.inf
    if df > 120:
        return 1.96
    return _T95[max(k for k in _T95 if k <= df)]


@dataclass(frozen=True)
class Estimate:
    """A value with a 95% interval. ``method``: "repeats", "requests" or "single" (no interval)."""

    mean: float
    se: float | None
    df: int
    n: int
    method: str

    @property
    def half_width(self) -> float | None:
        return None if self.se is None else t95(self.df) * self.se

    @property
    def lo(self) -> float | None:
        """The interval's ends; None without one, or where mean -+ half width leaves the floats."""
        return None if self.se is None else finite(self.mean - self.half_width)  # type: ignore[operator]

    @property
    def hi(self) -> float | None:
        return None if self.se is None else finite(self.mean + self.half_width)  # type: ignore[operator]

    @property
    def rel_se(self) -> float | None:
        if self.se is None or not self.mean:
            return None
        return self.se / abs(self.mean)

    def to_json(self) -> dict:
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "n": self.n, "method": self.method}


def exp(x: float) -> float:
    """``math.exp`` that answers inf where the result is too large for a float, instead of raising:
    read-back values can be anything finite, and a report must still render."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, None
    # d * d, not d ** 2: float ** raises OverflowError where * gives inf
    return m, math.sqrt(sum((v - m) * (v - m) for v in values) / (len(values) - 1))


def finite(x: float | None) -> float | None:
    """``x`` when it is a finite number, else None (see the module doc)."""
    return x if x is not None and math.isfinite(x) else None


def from_repeats(values: list[float]) -> Estimate | None:
    """Mean of per-repeat values; an interval once there are two or more."""
    values = [float(v) for v in values if v is not None]
    if not values:
        return None
    m, sd = mean_sd(values)
    if finite(m) is None:
        return None
    if sd is None:
        return Estimate(m, None, 0, 1, "single")
    return Estimate(m, finite(sd / math.sqrt(len(values))), len(values) - 1, len(values), "repeats")


def from_samples(value: float | None, samples: list[float]) -> Estimate | None:
    """``value`` (an aggregate such as tok/s) with the relative spread of per-request ``samples``."""
    if value is None:
        return None
    samples = [float(s) for s in samples if s is not None]
    if len(samples) < 2:
        return Estimate(float(value), None, 0, 1, "single")
    m, sd = mean_sd(samples)
    if not m:
        return Estimate(float(value), None, 0, 1, "single")
    rel = (sd or 0.0) / abs(m) / math.sqrt(len(samples))
    return Estimate(float(value), finite(abs(float(value)) * rel), len(samples) - 1, len(samples), "requests")


@dataclass(frozen=True)
class Ratio:
    """a / b with a 95% interval (None when either side has none)."""

    value: float
    lo: float | None
    hi: float | None

    @property
    def significant(self) -> bool:
        """The interval excludes 1: a real difference, not noise."""
        return self.lo is not None and self.hi is not None and (self.lo > 1.0 or self.hi < 1.0)

    def to_json(self) -> dict:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "significant": self.significant}


def ratio(a: Estimate | None, b: Estimate | None) -> Ratio | None:
    if a is None or b is None or not b.mean or a.mean <= 0 or b.mean <= 0:
        return None
    value = finite(a.mean / b.mean)
    if value is None:
        return None
    if a.rel_se is None or b.rel_se is None:
        return Ratio(value, None, None)
    rel = math.hypot(a.rel_se, b.rel_se)
    z = t95(max(1, min(a.df, b.df)))
    return interval(value, rel, z)


def interval(value: float, rel: float, z: float) -> Ratio:
    """``value`` with its interval on the log scale; none when the interval leaves the floats."""
    lo, hi = finite(value * exp(-z * rel)), finite(value * exp(z * rel))
    return Ratio(value, lo, hi) if lo is not None and hi is not None else Ratio(value, None, None)


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return finite(exp(sum(math.log(v) for v in values) / len(values)))

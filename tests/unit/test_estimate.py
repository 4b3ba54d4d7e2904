"""Intervals and ratios: known values, and that intervals shrink with more data."""

import math

from hypothesis import given
from hypothesis import strategies as st

from workloads.stats.estimate import from_repeats, from_samples, geomean, ratio, t95


def test_t_quantiles():
    assert t95(1) == 12.706
    assert t95(2) == 4.303
    assert t95(11) == 2.228  # conservative: the row below
    assert t95(1000) == 1.96
    assert math.isinf(t95(0))


def test_repeats_interval_known_value():
    e = from_repeats([100.0, 102.0, 98.0])
    assert e.mean == 100.0 and e.n == 3 and e.method == "repeats"
    assert abs(e.se - 2 / math.sqrt(3)) < 1e-9
    assert abs(e.half_width - 4.303 * 2 / math.sqrt(3)) < 1e-9


def test_single_value_has_no_interval():
    e = from_repeats([5.0])
    assert e.lo is None and e.hi is None and e.method == "single"
    assert from_repeats([]) is None


def test_samples_scale_relative_spread_onto_the_aggregate():
    e = from_samples(1000.0, [10.0, 12.0, 8.0, 10.0])
    rel = math.sqrt(8 / 3) / 10 / 2
    assert abs(e.se - 1000 * rel) < 1e-9 and e.method == "requests" and e.df == 3


def test_ratio_interval_contains_value_and_flags_significance():
    a, b = from_repeats([110, 111, 109]), from_repeats([100, 101, 99])
    r = ratio(a, b)
    assert r.lo < r.value < r.hi and abs(r.value - 1.1) < 1e-9
    assert r.significant
    noisy = ratio(from_repeats([110, 80, 140]), b)
    assert not noisy.significant
    assert ratio(from_repeats([1.0]), b).lo is None


@given(st.lists(st.floats(1, 1000), min_size=2, max_size=20))
def test_interval_always_brackets_the_mean(values):
    e = from_repeats(values)
    assert e.lo <= e.mean <= e.hi


def test_geomean():
    assert abs(geomean([2.0, 8.0]) - 4.0) < 1e-12
    assert geomean([]) is None

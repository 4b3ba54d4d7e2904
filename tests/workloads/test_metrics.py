"""Percentiles and distributions (pure)."""

import pytest

from workloads.stats.metrics import distribution, percentile


def test_percentile_matches_linear_interpolation():
    values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert percentile(values, 50) == pytest.approx(5.5)
    assert percentile(values, 95) == pytest.approx(9.55)
    assert percentile(values, 0) == 1 and percentile(values, 100) == 10
    assert percentile([], 50) is None
    assert percentile([3.0], 99) == 3.0


def test_distribution_ignores_missing_values():
    d = distribution([1.0, None, 3.0])
    assert d.count == 2 and d.mean == 2.0 and d.max == 3.0
    assert distribution([]).p50 is None

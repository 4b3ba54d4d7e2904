"""Percentiles and sliding windows (pure)."""

import pytest

from workloads.metrics import SlidingWindow, distribution, percentile


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


def test_sliding_window_rates_and_acceptance():
    w = SlidingWindow(horizon_s=10)
    for i in range(100):
        w.add_tokens(i * 0.1, 5)  # 50 tok/s for 10 s
    w.add_finished(9.5, 100, 25)
    w.add_finished(5.0, 60, 30)
    s1 = w.stats(10.0, 1.0)
    assert s1.tokens_per_s == pytest.approx(50)
    assert s1.acceptance == pytest.approx(4.0) and s1.finished == 1
    s10 = w.stats(10.0, 10.0)
    assert s10.acceptance == pytest.approx(160 / 55) and s10.finished == 2
    later = w.stats(30.0, 10.0)
    assert later.tokens_per_s == 0 and later.acceptance is None


def test_sliding_window_acceptance_none_without_speculative_data():
    w = SlidingWindow()
    w.add_finished(1.0, 100, None)
    assert w.stats(1.0, 10).acceptance is None

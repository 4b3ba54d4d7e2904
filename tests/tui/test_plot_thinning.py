"""The live plots draw at most the lowest and highest point of each braille column
(tui.widgets.live_plots.thin): ten minutes of a fast server's points build like one minute's, and the
line still reaches every extreme it reached."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from tui.widgets.live_plots import thin


def series(n: int, seed: int = 1) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [(i * 0.2, 1500 + rng.uniform(-300, 300)) for i in range(n)]


def test_few_points_are_drawn_as_they_are():
    points = series(100)
    assert thin(points, 0.0, 20.0, 118) is points


def test_many_points_keep_each_columns_extremes_in_time_order():
    points = series(3000)  # 600 s of a server that logs five decode lines a second
    kept = thin(points, 0.0, points[-1][0], 118)
    assert len(kept) <= 2 * 118
    assert kept == sorted(kept)  # time order
    assert set(kept) <= set(points)
    per = points[-1][0] / 118
    for column in range(118):  # each column's lowest and highest point are still there (the last holds hi)
        inside = [p for p in points if min(int(p[0] / per), 117) == column]
        if inside:
            assert min(inside, key=lambda p: p[1]) in kept and max(inside, key=lambda p: p[1]) in kept


@given(st.lists(st.tuples(st.floats(0, 600), st.floats(-1e6, 1e6)), max_size=800), st.integers(1, 200))
def test_the_extremes_and_the_ends_survive(raw, columns):
    points = sorted(raw)
    kept = thin(points, 0.0, 600.0, columns)
    if points:
        ys = [y for _, y in points]
        assert min(ys) in [y for _, y in kept] and max(ys) in [y for _, y in kept]
    assert len(kept) <= (len(points) if len(points) <= 2 * columns else 2 * columns)

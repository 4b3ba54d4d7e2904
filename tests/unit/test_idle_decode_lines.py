"""Idle decode lines (a burst's last, ``#token: 0``: recorded on a real 0.5.17) are no rate: the
collapse guard and the plots skip them, and one outlier cannot set the tok/s axis."""

from backends.logs.alarms import alarms_from_log
from tui.widgets.live_plots import robust_top

LINE = ("[2026-12-01 19:43:{s:02d}] Decode batch, #running-req: 8, #token: {t}, token usage: 0.00, "
        "accept len: {a:.2f}, accept rate: 0.00, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0")


def test_the_guard_ignores_idle_lines():
    # 30 s of idle closing lines reading accept len 1.00: no collapse (they are not decode intervals)
    idle = [LINE.format(s=s, t=0, a=1.0, g=31691.16) for s in range(0, 30)]
    assert alarms_from_log(idle, speculative=True) == []
    busy = [LINE.format(s=s, t=900, a=1.0, g=300.0) for s in range(0, 30)]
    assert [a.kind for a in alarms_from_log(busy, speculative=True)] == ["acceptance_collapse"]


def test_one_outlier_does_not_set_the_axis():
    steady = [1000.0 + i for i in range(60)]
    assert max(steady) - 5 <= robust_top([*steady, 31691.16]) <= max(steady)
    assert robust_top([5.0, 7.0]) == 7.0
    assert robust_top(steady) <= max(steady)

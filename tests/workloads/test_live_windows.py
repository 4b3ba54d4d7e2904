"""The live load's window engine (pure): rolling rates, closed windows, pauses, approximate counts."""

import pytest

from workloads.live.windows import MERGE_S, LiveWindows


def steady(w: LiveWindows, start: float, end: float, per_tick: int = 5, tick: float = 0.1, exact: bool = True):
    t = start
    while t < end - 1e-9:
        t = round(t + tick, 6)
        w.add_tokens(t, per_tick, exact)


def test_rolling_rates_and_acceptance():
    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 10.0)                       # 50 tok/s for 10 s
    w.add_finished(5.5, 60, 30)
    w.add_finished(9.5, 100, 25)
    one = w.rate(10.0, 1.0)
    assert one.tokens_per_s == pytest.approx(50) and one.window_s == 1.0
    assert one.acceptance == pytest.approx(4.0) and one.finished == 1
    five = w.rate(10.0, 5.0)
    assert five.tokens_per_s == pytest.approx(50)
    assert five.acceptance == pytest.approx(160 / 55) and five.finished == 2
    assert not five.approx
    later = w.rate(30.0, 5.0)
    assert later.tokens_per_s == 0 and later.acceptance is None


def test_a_rate_right_after_the_start_or_a_resume_is_not_diluted():
    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 1.0)                        # 50 tok/s for the first second
    assert w.rate(1.0, 5.0).tokens_per_s == pytest.approx(50)
    w.pause()
    w.resume(20.0)
    steady(w, 20.0, 22.0, per_tick=8)          # 80 tok/s for 2 s after the resume
    assert w.rate(22.0, 5.0).tokens_per_s == pytest.approx(80)
    assert w.rate(22.0, 5.0).measured_s == pytest.approx(2.0) and w.rate(30.0, 5.0).measured_s == 5.0
    assert w.rate(20.0, 5.0).tokens_per_s == 0


def test_a_rate_can_be_read_in_the_recent_past():
    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 5.0, per_tick=2)   # 20 tok/s
    steady(w, 5.0, 10.0, per_tick=8)  # 80 tok/s
    assert w.rate(5.0, 5.0).tokens_per_s == pytest.approx(20)
    assert w.rate(10.0, 5.0).tokens_per_s == pytest.approx(80)


def test_closed_windows_tile_from_the_start_and_each_keeps_its_own_acceptance():
    w = LiveWindows(100.0, roll_s=5.0)
    steady(w, 100.0, 112.0)
    w.add_finished(103.0, 40, 10)
    w.add_finished(107.0, 90, 30)
    closed = w.close(112.0)
    assert [c.t_s for c in closed] == [5.0, 10.0]
    assert [c.tok_s for c in closed] == [pytest.approx(50), pytest.approx(50)]
    assert [c.acceptance for c in closed] == [pytest.approx(4.0), pytest.approx(3.0)]
    assert [c.first for c in closed] == [True, False]
    assert w.close(112.0) == ()                    # nothing new until the next one ends
    assert [c.index for c in w.close(115.0)] == [2]
    assert [c.to_json() for c in closed][0] == {"t_s": 5.0, "tok_s": 50.0, "acceptance": 4.0,
                                                "acceptance_source": "request"}


def test_a_pause_drops_the_window_under_way_and_a_resume_tiles_afresh():
    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 7.0)
    assert len(w.close(7.0)) == 1
    w.pause()
    assert w.close(20.0) == ()                     # nothing closes while paused
    w.resume(20.0)
    steady(w, 20.0, 30.0)
    closed = w.close(30.0)
    assert [c.t_s for c in closed] == [25.0, 30.0]
    assert closed[0].first and not closed[1].first
    assert all(c.tok_s == pytest.approx(50) for c in closed)


def test_counts_by_chunks_mark_rates_and_windows_approx():
    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 5.0)
    steady(w, 5.0, 10.0, exact=False)
    closed = w.close(10.0)
    assert [c.approx for c in closed] == [False, True]
    assert closed[1].to_json()["approx"] is True and "approx" not in closed[0].to_json()
    assert w.rate(10.0, 1.0).approx and not w.rate(5.0, 5.0).approx
    assert w.approx_seen


def test_memory_stays_bounded_on_a_long_fast_run():
    w = LiveWindows(0.0, roll_s=5.0, keep=10)
    for i in range(1, 200_001):                    # 2000 s at a chunk every 10 ms
        t = i * MERGE_S
        w.add_tokens(t, 3)
        if i % 100 == 0:
            w.close(t)
    assert len(w._tokens) <= (w.horizon_s + w.roll_s) / MERGE_S + 2
    assert len(w.closed) == 10 and w.closed[-1].t_s == pytest.approx(2000.0)


def test_a_zero_window_is_refused():
    with pytest.raises(ValueError, match="longer than 0"):
        LiveWindows(0.0, roll_s=0)


def test_without_request_spec_fields_windows_take_the_counters_at_their_edges():
    """Chat before sglang 0.5.19 carries no spec field: the counters' delta, labelled as such."""
    from backends.logs.acceptance import SpecCounters

    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 10.0)
    for t in range(11):  # read once a second: 30 tokens and 10 verify calls, then 40 and 10
        tokens = 30 * t if t <= 5 else 150 + 40 * (t - 5)
        w.add_counters(float(t), SpecCounters(tokens, 10.0 * t))
    w.add_finished(4.0, 60, None)  # requests without spec fields leave the counters to speak
    first, second = w.close(10.0)
    assert (first.acceptance, first.acceptance_source) == (3.0, "counters")
    assert (second.acceptance, second.acceptance_source) == (4.0, "counters")
    assert second.to_json()["acceptance_source"] == "counters"
    roll = w.rate(10.0, 2.0)
    assert (roll.acceptance, roll.acceptance_source) == (4.0, "counters")
    w.add_finished(9.5, 100, 20)  # a request's own figure wins where there is one
    assert (w.rate(10.0, 2.0).acceptance, w.rate(10.0, 2.0).acceptance_source) == (5.0, "request")


def test_no_counter_readings_and_no_request_figures_leave_no_acceptance():
    w = LiveWindows(0.0, roll_s=5.0)
    steady(w, 0.0, 5.0)
    w.add_counters(1.0, None)  # a server without /metrics
    (window,) = w.close(5.0)
    assert window.acceptance is None and window.acceptance_source is None

"""The live A/B per configuration (pure): segments from marker to marker, means with intervals,
the change against the previous configuration or the pinned baseline."""

import pytest

from workloads.live.ab import LiveAB, change_pct, config_names
from workloads.live.windows import Window

W2048 = {"budget": None, "topk": None, "window": 2048}
W1024 = {"budget": None, "topk": None, "window": 1024}
W512 = {"budget": None, "topk": None, "window": 512}


def windows(ab: LiveAB, start: int, rates: list[float], ramp: bool = True) -> int:
    """Closed windows numbered from ``start``; the first holds the ramp-up unless ``ramp`` is False."""
    for i, rate in enumerate(rates):
        ab.add_window(Window(start + i, 5.0 * (start + i + 1), 5.0, rate, 3.4, 4, first=ramp and i == 0))
    return start + len(rates)


def test_each_configuration_gets_its_own_figures_and_the_change():
    ab = LiveAB(W2048)
    ab.resume()
    windows(ab, 0, [10.0, 100.0, 102.0, 98.0, 100.0])   # the first (ramp-up) window is left out
    for verdict, acc in (("pass", 3.4), ("pass", 3.5), ("fail", 3.3), ("pass", 3.4)):
        ab.add_request(True, verdict, acc)
    ab.add_request(False, "error", None)                   # a failed request is not counted
    ab.add_request(False, "cancelled", None)
    ab.mark(W1024, "window 2048 -> 1024")
    windows(ab, 5, [101.0], ramp=False)                    # still the old server: before the pause
    ab.pause()
    ab.add_window(Window(6, 35.0, 5.0, 1.0, None, 0))     # nothing counts while paused
    ab.resume()
    windows(ab, 0, [5.0, 110.0, 112.0, 108.0, 110.0])     # a new load process numbers from 0 again
    ab.add_request(True, "pass", 3.0)
    ab.add_request(True, "pass", 3.1)

    first, second = ab.configs()
    assert first.tok_s.mean == pytest.approx(100.2) and first.windows == 5
    assert (first.requests, first.passed, first.graded) == (4, 3, 4)
    assert first.acceptance.mean == pytest.approx(3.4) and first.marker is None
    assert second.marker == "window 2048 -> 1024" and second.knobs == W1024
    assert second.tok_s.mean == pytest.approx(110.0) and second.windows == 4
    assert second.tok_s.lo < 110.0 < second.tok_s.hi
    cmp = ab.comparison()
    assert cmp.current.number == 2 and cmp.reference.number == 1 and not cmp.pinned
    assert cmp.tok_s.value == pytest.approx(110.0 / 100.2)
    assert cmp.tok_s.lo < cmp.tok_s.value < cmp.tok_s.hi
    assert change_pct(cmp.tok_s).startswith("+9.8% [")


def test_the_pinned_baseline_is_the_reference_of_every_later_configuration():
    ab = LiveAB(W2048)
    ab.resume()
    windows(ab, 0, [0.0, 100.0, 100.0])
    assert ab.comparison().reference is None
    ab.pin()
    assert ab.comparison().reference is None and ab.comparison().pinned   # the baseline itself
    for knobs, rate in ((W1024, 120.0), (W512, 90.0)):
        ab.mark(knobs, "change")
        ab.pause()
        ab.resume()
        windows(ab, 0, [0.0, rate, rate])
    cmp = ab.comparison()
    assert cmp.pinned and cmp.reference.knobs == W2048 and cmp.current.knobs == W512
    assert cmp.tok_s.value == pytest.approx(0.9)


def test_a_mark_to_the_same_knobs_changes_nothing():
    ab = LiveAB(W2048)
    ab.mark(W2048, "same knobs")
    ab.resume()
    assert len(ab.configs()) == 1


def test_names_say_what_differs():
    assert config_names(W2048, W1024) == ("window=2048", "window=1024")
    assert config_names({"window": None, "topk": 4}, {"window": 1024, "topk": 4}) == ("window=none", "window=1024")
    assert config_names(W2048, W2048) == ("", "")


def test_change_without_an_interval_is_the_bare_percentage():
    from workloads.stats.estimate import Ratio

    assert change_pct(Ratio(1.124, None, None)) == "+12.4%"
    assert change_pct(Ratio(0.9, 0.85, 0.95)) == "-10.0% [-15.0, -5.0]"
    assert change_pct(None) is None


def test_windows_give_the_acceptance_where_requests_carry_none_and_say_from_where():

    ab = LiveAB({"window": 2048})
    ab.resume()
    for i, value in enumerate((9.0, 4.0, 4.2, 4.4)):  # the first window is the ramp-up: left out
        ab.add_window(Window(i, i + 1.0, 1.0, 100.0, value, 2, False, i == 0, "log"))
        ab.add_request(True, "pass", None)
    figures = ab.current.figures()
    assert figures.acceptance_source == "log" and figures.acceptance.mean == pytest.approx(4.2)
    ab.add_request(True, "pass", 6.0)  # a request's own figure wins over the server's
    figures = ab.current.figures()
    assert figures.acceptance_source == "request" and figures.acceptance.mean == 6.0


def test_a_configuration_nothing_was_measured_on_takes_the_new_knobs_in_place():
    """The console re-attached to a server tuned away from its file: the config the console began with
    measured nothing, so the load's figures belong to what runs, labelled so, with nothing to compare."""
    ab = LiveAB(W512)
    ab.mark(W1024, "window 512 -> 1024")
    ab.resume()
    windows(ab, 0, [5.0, 100.0, 102.0])
    (only,) = ab.configs()
    assert only.knobs == W1024 and only.number == 1 and only.windows == 2
    assert ab.comparison().reference is None


def _stats(window: Window | None, measured_s: float = 1.0, paused: bool = False):
    from workloads.live.events import LoadStats
    from workloads.live.windows import WindowStats

    return LoadStats(5.0, 4, 4, 0, 0, 0, WindowStats(1.0, 90.0, None, 0, measured_s=measured_s),
                     WindowStats(5.0, 95.0, None, 0), paused=paused, last_window=window)


def test_the_ab_takes_each_load_event_and_hands_back_a_tick_worth_plotting():
    """The console hands the A/B every event of its load (LiveAB.observe): starts and resumes open a
    share, pauses and stops close it, windows and requests count, and a tick comes back for the plots
    only once the 1 s rate covers most of a second and the load is not paused."""
    from workloads.live.events import (LoadPaused, LoadResumed, LoadStarted, LoadStopped, RequestDone,
                                       StatsUpdated)

    ab = LiveAB(W2048)
    early = _stats(Window(0, 5.0, 5.0, 10.0, None, 0, first=True), measured_s=0.5)
    assert ab.observe(StatsUpdated(early)) is None                  # before the start: paused, nothing counts
    assert ab.observe(LoadStarted(1, 4, ("fib",))) is None
    assert ab.observe(StatsUpdated(early)) is None                  # half a second in: the TTFT, not the pace
    tick = _stats(Window(1, 10.0, 5.0, 100.0, None, 0))
    assert ab.observe(StatsUpdated(tick)) is tick
    assert ab.observe(StatsUpdated(_stats(Window(2, 15.0, 5.0, 104.0, None, 0), paused=True))) is None
    ab.observe(RequestDone("fib", True, 100, 50.0, 3.5, 0.1, 2.0, "pass", "ok"))
    ab.observe(RequestDone("fib", False, 10, 0.0, None, None, None, "cancelled", "cancelled: the load was paused"))
    ab.observe(LoadPaused(1, tick))
    ab.observe(StatsUpdated(_stats(Window(3, 20.0, 5.0, 1.0, None, 0))))  # paused: not counted
    ab.observe(LoadResumed(tick))
    ab.observe(StatsUpdated(_stats(Window(0, 5.0, 5.0, 96.0, None, 0))))  # a resumed load: windows afresh
    ab.observe(LoadStopped("stopped", None, tick))
    ab.observe(StatsUpdated(_stats(Window(1, 10.0, 5.0, 1.0, None, 0))))  # stopped: not counted
    (only,) = ab.configs()
    assert only.windows == 3 and only.tok_s is not None and only.tok_s.mean == pytest.approx(100.0)
    assert (only.requests, only.passed, only.graded) == (1, 1, 1)


def test_a_change_says_its_trend_only_when_its_interval_excludes_no_change():
    from workloads.live.ab import Change
    from workloads.stats.estimate import Ratio

    assert Change.of(None) == Change("-", 0)
    assert Change.of(Ratio(1.124, 1.081, 1.167)) == Change("+12.4% [8.1, 16.7]", 1)
    assert Change.of(Ratio(0.9, 0.85, 0.95)).trend == -1
    assert Change.of(Ratio(1.05, 0.98, 1.12)).trend == 0          # within noise: no colour claims a winner
    assert Change.of(Ratio(1.05, None, None)) == Change("+5.0%", 0)

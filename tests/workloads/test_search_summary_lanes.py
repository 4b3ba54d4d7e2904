"""The search summary's restart seconds on lanes: they add up every lane's restarts (serial
seconds), so the summary says so and gives the grid's wall time on as many lanes beside its summed
estimate; the serial summary and the JSON fields it had stay as they were."""

from __future__ import annotations

from workloads.search.engine import Target
from workloads.report.search_summary import summary_lines
from workloads.search.report import summarize
from workloads.search.space import parse_space
from workloads.search.strategy import Observation, Search, SearchOptions

OLD_FIELDS = {"used", "grid", "share", "seconds", "median_s", "grid_estimate_s"}


def measured(lanes: int) -> dict:
    """A 3-configuration race, every configuration restarted once: 2, 4 and 6 s (median 4 s)."""
    space = parse_space("budget=4,8,16")
    search = Search(space, SearchOptions(waves=2, rungs=1, lanes=lanes), (8,))
    plan = search.propose()
    assert plan is not None and len(plan.asks) == 3
    search.observe([Observation(ask.point, (100.0 + i, 101.0 + i), True, 2.0 * (i + 1),
                                lane=i % lanes if lanes > 1 else None, gpus=(str(i % lanes),) if lanes > 1 else ())
                    for i, ask in enumerate(plan.asks)])
    return summarize(search, Target(), "/tmp/s", "done", wall_s=9.0)


def test_on_lanes_the_restart_seconds_say_they_are_summed_and_the_grid_gets_a_wall_estimate():
    summary = measured(2)
    restarts = summary["restarts"]
    assert OLD_FIELDS <= set(restarts)
    assert restarts["seconds"] == 12.0 and restarts["median_s"] == 4.0 and restarts["grid_estimate_s"] == 12.0
    # 3 configurations on 2 lanes: the busier lane restarts twice
    assert restarts["summed_over_lanes"] == 2 and restarts["grid_wall_estimate_s"] == 8.0
    line = next(x for x in summary_lines(summary) if x.startswith("restarts:"))
    assert line == ("restarts: 3 of a full grid's 3 (100%); 12.0 s restarting summed over 2 lanes, a grid would "
                    "spend about 12 s summed (about 8 s of wall time on 2 lanes)")


def test_the_serial_summary_line_is_unchanged():
    summary = measured(1)
    restarts = summary["restarts"]
    assert restarts["summed_over_lanes"] == 1 and restarts["grid_wall_estimate_s"] == restarts["grid_estimate_s"]
    line = next(x for x in summary_lines(summary) if x.startswith("restarts:"))
    assert line == "restarts: 3 of a full grid's 3 (100%); 12.0 s restarting, a grid would spend about 12 s"

"""A fixed search for the search screen's snapshots: the real strategy (workloads.search.strategy)
walked over the 27-configuration space with tok/s samples from a fixed formula, its events built as
the engine builds them. No process, no clock, no randomness."""

from __future__ import annotations

from workloads.search import events as ev
from workloads.search.engine import Target
from workloads.search.report import summarize
from workloads.search.space import SearchSpace
from workloads.search.strategy import Observation, Search, SearchOptions

SPACE = SearchSpace((("budget", (4, 8, 16)), ("topk", (2, 4, 6)), ("window", (1024, 2048, None))))
PATH = "/home/op/.local/state/ddtune/runs/20261130T090000Z-search"
OOM = "oom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"


def _samples(point, waves: int) -> tuple[float, ...]:
    budget, topk, window = point
    base = (700 + {4: -20, 8: 40, 16: -60}[budget] + {2: 30, 4: 0, 6: -45}[topk]
            + {1024: -15, 2048: 10, None: -5}[window])
    return tuple(base + (9 if i % 2 else -9) + 3 * (i % 3) for i in range(waves))


def search_events(rounds: int | None = None, failing=(16, 4, 2048)) -> list:
    """The events of the fixed search, all (``rounds`` None: finished) or up to round ``rounds``
    started and not finished. ``failing``: a configuration whose server fails to start."""
    search = Search(SPACE, SearchOptions(), SPACE.middle(), None)
    events: list = [ev.SearchStarted(PATH, SPACE, search.start, 0, 0, 95.0)]
    while (plan := search.propose()) is not None:
        events.append(ev.RoundStarted(plan, search.restarts_needed(plan), search.restarts))
        if rounds is not None and plan.number == rounds:
            return events
        found = []
        for i, ask in enumerate(plan.asks):
            restarted = not (i == 0 and ask.point == search.running)
            if ask.point == failing:
                found.append(Observation(ask.point, (), True, 41.0, OOM))
            else:
                have = search.have(ask.point)
                found.append(Observation(ask.point, _samples(ask.point, have + ask.waves)[have:], restarted,
                                         92.0 if restarted else None))
        seen = len(search.decisions)
        search.observe(found)
        events.append(ev.RoundFinished(plan, tuple(found), tuple(search.estimate(o.point) for o in found),
                                       tuple(search.decisions[seen:])))
    summary = summarize(search, Target(), PATH, "done", 1234.5)
    events.append(ev.SearchFinished(PATH, "done", summary))
    return events

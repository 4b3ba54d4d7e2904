"""``ddtune search``: find the fastest configuration of a knob space with few restarts.

The face: a ``SearchRequest`` planned (``plan_search``) into a new search's folder (``start_search``),
or a ``SearchStore`` reopened; the ``SearchEngine`` with a round runner (``SweepRoundRunner`` on the
managed server, ``LaneRoundRunner`` on parallel lanes); the events it reports and the lines that say
them.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.search.engine": ("SearchEngine", "SweepRoundRunner", "Target"),
    "workloads.search.events": ("RoundFinished", "RoundProgress", "RoundStarted", "SearchEvent", "SearchFinished",
                                "SearchStarted"),
    "workloads.search.lanes": ("LaneRoundRunner",),
    "workloads.search.report": ("decision_line", "round_title", "summary_lines", "tok_text"),
    "workloads.search.request": ("SearchRequest",),
    "workloads.search.space": ("SearchSpace", "parse_search_space"),
    "workloads.search.start": ("example_space", "plan_search", "start_search"),
    "workloads.search.store": ("SearchStore",),
})

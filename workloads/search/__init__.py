"""``ddtune search``: find the fastest configuration of a knob space with few restarts.

The face is the use case: ``run_search(SearchSpec, on_event) -> SearchOutcome`` (a new
``SearchRequest`` or a resumed search, on the managed server or in parallel lanes, as the spec says),
the events it reports (``SearchEvent``: the engine's, each round's sweep events, the lanes) with what
people see of them (``SearchView``: the search screen's state and the command's lines); a request with
no space asked yet starts from ``SearchRequest.example(config)`` (a search read back is workloads.report's).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.search.events": ("RoundFinished", "RoundProgress", "RoundStarted", "SearchEvent", "SearchFinished",
                                "SearchStarted"),
    "workloads.search.request": ("SearchRequest",),
    "workloads.search.run": ("SearchOutcome", "SearchSpec", "run_search"),
    "workloads.search.view": ("SearchView",),
    "workloads.sweep.events": ("LaneClosed", "LanesStarted"),
})

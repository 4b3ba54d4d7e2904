# The types of what workloads.search offers (its __init__.py loads each module on first use).

from workloads.search.events import (RoundFinished as RoundFinished, RoundProgress as RoundProgress,
                                     RoundStarted as RoundStarted, SearchEvent as SearchEvent,
                                     SearchFinished as SearchFinished, SearchStarted as SearchStarted)
from workloads.search.request import SearchRequest as SearchRequest
from workloads.search.run import SearchOutcome as SearchOutcome, SearchSpec as SearchSpec, run_search as run_search
from workloads.search.view import SearchView as SearchView
from workloads.sweep.events import LaneClosed as LaneClosed, LanesStarted as LanesStarted

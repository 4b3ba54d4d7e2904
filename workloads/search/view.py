"""What people see of a search's events, one call per event: ``view(event)`` is the search screen's
``Change`` (its table, round panel, restarts, best and notices: board.py) carrying the lines ``ddtune
search`` writes to stderr (``change.lines``: lines.py). The console draws the change, the command prints
its lines; each front end renders what it needs of the same answer."""

from __future__ import annotations

from workloads.search.board import Change, SearchBoard
from workloads.search.events import SearchEvent
from workloads.search.lines import SearchLines


class SearchView(SearchBoard):
    """A search's board and its log lines as its events come (``path``: the board's, the search's folder
    once created)."""

    def __init__(self) -> None:
        super().__init__()
        self.log = SearchLines()

    def __call__(self, event: SearchEvent) -> Change:
        change = super().__call__(event)
        change.lines = self.log(event)
        return change

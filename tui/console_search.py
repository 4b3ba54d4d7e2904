"""The console's knob search (the search screen, tui/screens/search.py): the run.

Not widgets. The screen's fields become a request (``SearchRequest.from_fields``: a bad field raises
UsageError naming it and the fix, so nothing starts). ``ConsoleSearch.run`` runs in the screen's worker,
and it is ``ddtune search``'s run (workloads.search.run_search): the same search.json, the same engine
on the console's own ServerSession (so the server panel follows every restart), or with GPUs one lane
per GPU (as ``--parallel``); the same folder, runs/<time>-search, so ``ddtune search --resume --out DIR``
continues a search cut short.

Stopping: a cancelled run records the search as interrupted (resumable), stops every lane server, and on
the console's own server either returns it to the config it ran before the search (leaving the screen,
as ``ddtune search`` does on Ctrl-C) or leaves it as it is (quitting: the quit dialog decides whether it
keeps running or stops).
"""

from __future__ import annotations

from collections.abc import Callable

from tui.controller import ConsoleController
from workloads.search import SearchEvent, SearchRequest


class ConsoleSearch:
    """One search from the console. ``restore``: on a cancel, return the console's server to the config
    it ran before (True, leaving the screen) or leave it as it is (False, quitting the console)."""

    def __init__(self, console: ConsoleController, request: SearchRequest) -> None:
        self.console = console
        self.request = request
        self.restore = True

    async def run(self, on_event: Callable[[SearchEvent], None], on_note: Callable[[str], None]) -> None:
        """Run the search (workloads.search.run_search) to its end. ``on_event``: its events, ``on_note``:
        what was done with the console's server at the end."""
        from tui.console_sweep import holding_load
        from workloads.search import SearchSpec, run_search

        console, request = self.console, self.request
        gpus = ",".join(request.gpus) if request.gpus else None
        await run_search(SearchSpec(console.config, request, gpus=gpus, session=console.session,
                                    restore_on_cancel=lambda: self.restore, say=on_note,
                                    hold=holding_load(console, "search")), on_event)

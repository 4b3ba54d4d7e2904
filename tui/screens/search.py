"""The search screen: type a knob space, start ``ddtune search``'s engine, watch its rounds live.

The run is tui/console_search.py's (the same engine, plan and folder as ``ddtune search``) in this
screen's worker; its events come back as messages. The table has one row per configuration the
search started: its waves, tok/s with the 95% interval (pooled over every round), how often the
server was started for it, and its state; above it the round under way (the knob raced, the
candidates, the last race's decision) and the restarts used against a full grid's; at the end the
best with its margin, whether it is clear, and the ``ddtune up --set ...`` line. Escape (or quitting)
stops a search under way; ``ddtune search --resume --out DIR`` continues it.
"""

from __future__ import annotations

from rich.markup import escape
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Label, Static
from textual.widgets.data_table import RowKey

from backends.core import DdtuneError
from tui.console_search import ConsoleSearch
from tui.console_sweep import marked
from tui.controller import ConsoleController
from tui.literal import cell
from tui.widgets.lists import ListTable
from tui.widgets.ordered_input import OrderedInput
from workloads.search import SearchEvent, SearchRequest, SearchView


class SearchEventPosted(Message):
    """An event of the search under way (workloads.search.run_search's)."""

    def __init__(self, event: SearchEvent) -> None:
        super().__init__()
        self.event = event


class SearchScreen(Screen):
    BINDINGS = [Binding("escape", "leave", "Back", id="search.back"),
                Binding("a", "apply_best", "Apply best", id="search.apply_best")]
    DEFAULT_CSS = """
    SearchScreen .row { height: 1; margin: 0 1; }
    SearchScreen .row Label { padding: 0 1 0 0; color: $text-muted; }
    SearchScreen .row Input { margin-right: 2; }
    SearchScreen #space { width: 1fr; margin-right: 0; }
    SearchScreen #context { width: 8; }
    SearchScreen #concurrency { width: 6; }
    SearchScreen #gpus { width: 1fr; min-width: 12; }
    SearchScreen #fields { margin: 1 1 0 1; }
    SearchScreen #options { height: auto; color: $text-muted; padding: 0 1; }
    SearchScreen #round { height: auto; padding: 0 1; margin-top: 1; }
    SearchScreen #restarts { height: 1; padding: 0 1; }
    SearchScreen #measured { height: 1fr; min-height: 3; }
    SearchScreen #best { height: auto; padding: 0 1; }
    SearchScreen.-narrow.-started #options { display: none; }
    SearchScreen.-narrow #round { margin-top: 0; }
    SearchScreen.-narrow #fields { margin: 0 1; }
    """

    def __init__(self, console: ConsoleController, space: str, template: SearchRequest | None = None) -> None:
        super().__init__()
        self.console = console  # the search runs on its session (or beside it, in lanes)
        self.space_text = space
        self.template = template or SearchRequest(space)
        self.search: ConsoleSearch | None = None
        self.rows: dict[str, RowKey] = {}
        self.board = SearchView()  # what each event changes on this screen
        self.best: dict | None = None  # the best configuration of the last search done: {"label", "knobs"}

    @property
    def running(self) -> bool:
        return self.search is not None

    def compose(self) -> ComposeResult:
        t = self.template
        yield Header()
        with Horizontal(classes="row"):
            yield Label("space")
            yield OrderedInput(self.space_text, id="space", compact=True,
                        tooltip="knob=value,value,... per knob, separated by spaces; 'none' clears a knob; "
                                "the search tunes the knobs in this order")
        with Horizontal(id="fields", classes="row"):
            yield Label("target context")
            yield OrderedInput(str(t.target_context), id="context", compact=True,
                               tooltip="prompt tokens of the measured cell")
            yield Label("concurrency")
            yield OrderedInput(str(t.target_concurrency), id="concurrency", compact=True,
                        tooltip="requests in flight, released together as one wave (one tok/s sample)")
            yield Label("GPUs")
            yield OrderedInput(id="gpus", placeholder="this server", compact=True,
                        tooltip="one server per GPU beside this one (ddtune search --parallel); empty: search on "
                                "this console's server")
            yield Button("Start search", variant="primary", id="start", compact=True)
        yield Static(f"each race: {t.waves} waves, the better half twice as many, {t.rungs} rungs; "
                     f"{t.max_tokens} tokens per request (full options: ddtune search --help)", id="options")
        yield Static("type a space and start; the server restarts only when the knobs change", id="round")
        yield Static("", id="restarts")
        yield ListTable(id="measured", zebra_stripes=True, cursor_type="none")
        yield Static("", id="best")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#measured", DataTable).add_columns(*self.board.columns)

    # --- start and stop ---------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start" and not self.running:
            self.start()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not self.running:
            self.start()

    def start(self) -> None:
        """Check the fields (a bad one: a message naming it, nothing started), then run the search."""
        value = lambda ident: self.query_one(f"#{ident}", Input).value  # noqa: E731
        try:
            request = self.template.from_fields(self.console.config, value("space"), value("context"),
                                                value("concurrency"), value("gpus"))
        except DdtuneError as exc:
            text = exc.message + (f"; {exc.hint}" if exc.hint else "")
            self.notify(text, severity="error", timeout=10)
            self._say(f"[red]not started: {escape(text)}[/red]")
            return
        self.search = ConsoleSearch(self.console, request)
        self.add_class("-started")  # at 80x24 the options line gives its rows to the results
        self.query_one("#measured", DataTable).clear()  # a second search on this screen starts afresh
        self.query_one("#best", Static).update("")
        self.rows, self.board = {}, SearchView()
        for widget in self.query(Input):
            widget.disabled = True
        self.query_one("#start", Button).disabled = True
        self._say(f"starting: {escape(request.space)}")
        self.run_search(self.search)

    @work(exclusive=True, group="search", exit_on_error=False)
    async def run_search(self, search: ConsoleSearch) -> None:
        def note(text: str) -> None:  # the app's, at once: said before the search counts as over, and
            self.app.notify(text, timeout=8)  # still said after Esc popped this screen (its queue is gone)

        try:
            await search.run(self._post_event, note)
        except DdtuneError as exc:
            self._say(f"[red]search refused: {escape(exc.message)}{escape(f' ({exc.hint})' if exc.hint else '')}[/]")
        except Exception as exc:  # a bug: say so on the screen, not only in the worker's state
            self._say(f"[red]search failed: {escape(type(exc).__name__)}: {escape(str(exc))}; "
                      f"{escape(self.board.interrupted_line())}[/]")
            raise
        finally:
            self.search = None
            if self.is_attached:  # not after Esc: the screen is gone
                for widget in self.query(Input):
                    widget.disabled = False
                self.query_one("#start", Button).disabled = False

    async def stop_search(self, restore: bool) -> None:
        """Stop a search under way and wait until its servers are settled: ``restore`` returns the
        console's server to the config it ran before (else it is left as it is, for the quit dialog)."""
        from textual.worker import WorkerCancelled, WorkerFailed

        if self.search is None:
            return
        self.search.restore = restore
        for worker in [w for w in self.workers if w.group == "search" and not w.is_finished]:
            worker.cancel()
            try:
                await worker.wait()
            except (WorkerCancelled, WorkerFailed):
                pass

    def action_leave(self) -> None:
        search = self.search
        if search is not None:
            search.restore = True
            self.app.notify(self.board.interrupted_line() + "; the server goes back to the config it ran before",
                            timeout=10)
        self.app.pop_screen()  # the worker is cancelled with the screen; its cleanup finishes on its own

    # --- events -----------------------------------------------------------------------------
    def _post_event(self, event: SearchEvent) -> None:  # from the engine, in this screen's worker
        for text in self.board.said_at_once(event):  # the app's, at once: said before the search counts as
            self.app.notify(text, timeout=8)          # over, and still said after Esc popped this screen
        self.post_message(SearchEventPosted(event))

    def _say(self, markup: str) -> None:
        self.query_one("#round", Static).update(markup)

    def on_search_event_posted(self, message: SearchEventPosted) -> None:
        """Draw what the event changed (workloads.search.SearchView says what)."""
        change = self.board(message.event)
        table = self.query_one("#measured", DataTable)
        for label in change.rows:
            self.rows[label] = table.add_row(label, "-", "-", "0", "queued", key=label)
        for label, column, mark in change.cells:
            if label in self.rows:
                table.update_cell(self.rows[label], table.ordered_columns[column].key,
                                  cell(marked([mark]) if mark.tone else mark.text), update_width=True)
        if change.round is not None:
            self.query_one("#round", Static).update(marked(change.round))
        if change.restarts is not None:
            self.query_one("#restarts", Static).update(change.restarts)
        for text, error in change.notices:
            self.notify(text, severity="error", timeout=10) if error else self.notify(text, timeout=8)
        if change.best is not None:
            self.best = self.board.best
            self.query_one("#best", Static).update(marked(change.best))
            if self.best is not None:  # off the space field, which takes a as text: a applies the best
                self.query_one("#measured", DataTable).focus()

    def action_apply_best(self) -> None:
        """``a``: restart this console's server with the best the search found (verified, as Apply)."""
        if self.running:
            self.notify("the search is still running; a applies its best once it is done", timeout=4)
            return
        if self.best is None:
            self.notify("no search has found a best yet", timeout=4)
            return
        self.console.restart_with(dict(self.best["knobs"]))  # the space's values, as the search ran them
        self.notify(f"restarting with the best: {self.best['label']}", timeout=6)


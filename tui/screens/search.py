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

import re

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Label, Static
from textual.widgets.data_table import RowKey

from backends.core import DdtuneError
from tui.console_search import ConsoleSearch, interrupted_line, parse_request
from tui.controller import ConsoleController
from tui.literal import cell
from tui.widgets.lists import ListTable
from tui.widgets.ordered_input import OrderedInput
from workloads.report import home_short
from workloads.search import SearchRequest, SearchSpace

COLUMNS = ("configuration", "waves", "tok/s ± 95%", "starts", "state")
STATE_WIDTH = 18  # the state column's text at most: a 3-knob label and the figures leave this much at 80 columns
_FRACTION = re.compile(r"\d+/\d+")


def phase_text(phase: str, detail: str) -> str:
    """A server phase for the state column, with its progress when it has one: ``warmup``,
    ``loading 3/8`` (loading-weights, shortened to fit)."""
    found = _FRACTION.search(detail or "")
    text = f"{phase} {found.group(0)}" if found else phase
    if len(text) > STATE_WIDTH:
        text = f"{phase.split('-')[0]} {found.group(0)}" if found else phase
    return text[:STATE_WIDTH]


class SearchEventPosted(Message):
    """An event of the search under way: the engine's (``plan`` None) or a round's sweep event."""

    def __init__(self, event: object, plan: object = None) -> None:
        super().__init__()
        self.event = event
        self.plan = plan


def tok_cell(est) -> str:
    """``780 ± 11`` (half the 95% interval), ``780`` from one wave, ``-`` before any."""
    if est is None:
        return "-"
    half = est.half_width
    return f"{est.mean:.0f}" + (f" ± {half:.0f}" if half is not None else "")


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
        self.starts: dict[str, int] = {}
        self.space: SearchSpace | None = None  # once the search started
        self.grid = 0
        self.restarts = 0
        self.round_text = ""
        self.decision = ""  # how the last race ended
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
        self.query_one("#measured", DataTable).add_columns(*COLUMNS)

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
            request = parse_request(self.console.config, value("space"), value("context"), value("concurrency"),
                                    value("gpus"), self.template)
        except DdtuneError as exc:
            text = exc.message + (f"; {exc.hint}" if exc.hint else "")
            self.notify(text, severity="error", timeout=10)
            self._say(f"[red]not started: {escape(text)}[/red]")
            return
        self.search = ConsoleSearch(self.console, request)
        self.add_class("-started")  # at 80x24 the options line gives its rows to the results
        self.query_one("#measured", DataTable).clear()  # a second search on this screen starts afresh
        self.query_one("#best", Static).update("")
        self.rows, self.starts, self.restarts, self.round_text, self.decision = {}, {}, 0, "", ""
        for widget in self.query(Input):
            widget.disabled = True
        self.query_one("#start", Button).disabled = True
        self._say(f"starting: {escape(request.space)}")
        self.run_search(self.search)

    @work(exclusive=True, group="search", exit_on_error=False)
    async def run_search(self, search: ConsoleSearch) -> None:
        def progress(plan: object, event: object) -> None:
            self.post_message(SearchEventPosted(event, plan))

        def note(text: str) -> None:  # the app's, at once: said before the search counts as over, and
            self.app.notify(text, timeout=8)  # still said after Esc popped this screen (its queue is gone)

        try:
            await search.run(self._post_event, progress, note)
        except DdtuneError as exc:
            self._say(f"[red]search refused: {escape(exc.message)}{escape(f' ({exc.hint})' if exc.hint else '')}[/]")
        except Exception as exc:  # a bug: say so on the screen, not only in the worker's state
            self._say(f"[red]search failed: {escape(type(exc).__name__)}: {escape(str(exc))}; "
                      f"{escape(interrupted_line(search.path))}[/]")
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
            self.app.notify(interrupted_line(search.path) + "; the server goes back to the config it ran before",
                            timeout=10)
        self.app.pop_screen()  # the worker is cancelled with the screen; its cleanup finishes on its own

    # --- events -----------------------------------------------------------------------------
    def _post_event(self, event: object) -> None:  # from the engine, in this screen's worker
        self.post_message(SearchEventPosted(event))

    def _say(self, markup: str) -> None:
        self.query_one("#round", Static).update(markup)

    def on_search_event_posted(self, message: SearchEventPosted) -> None:
        from workloads.search import RoundFinished, RoundStarted, SearchFinished, SearchStarted

        event = message.event
        if message.plan is not None:
            self._progress(event)
        elif isinstance(event, SearchStarted):
            self.space, self.grid = event.space, event.space.size
            shape = " x ".join(f"{name} {len(values)}" for name, values in event.space.axes)
            one_pass = 1 + sum(len(values) - 1 for _, values in event.space.axes)
            self._say(f"search of {event.space.size} configurations ({shape}): one pass starts about {one_pass}; "
                      f"from {escape(event.space.label(event.start))}\nfolder {escape(home_short(event.path))}")
            self._restarts()
        elif isinstance(event, RoundStarted) and self.space is not None:
            self._round_started(event)
        elif isinstance(event, RoundFinished) and self.space is not None:
            self._round_finished(event)
        elif isinstance(event, SearchFinished):
            self._finished(event)

    def _cell(self, label: str, column: int, value: str | Text) -> None:
        table = self.query_one("#measured", DataTable)
        if label in self.rows:
            table.update_cell(self.rows[label], table.ordered_columns[column].key, cell(value), update_width=True)

    def _restarts(self, extra: str = "") -> None:
        self.query_one("#restarts", Static).update(f"restarts: {self.restarts} of a full grid's {self.grid}{extra}")

    def _round_started(self, event) -> None:
        from workloads.search import round_title

        space = self.space
        assert space is not None
        for ask in event.plan.asks:
            label = space.label(ask.point)
            if label not in self.rows:
                self.rows[label] = self.query_one("#measured", DataTable).add_row(label, "-", "-", "0", "queued",
                                                                                  key=label)
            self._cell(label, 4, f"round {event.plan.number}: {event.plan.need} waves")
        self.round_text = (f"[b]{escape(round_title(space, event.plan))}[/b]\n"
                           f"candidates: {escape(', '.join(space.label(a.point) for a in event.plan.asks))}")
        self._say(self.round_text + (f"\nlast race: {escape(self.decision)}" if self.decision else ""))
        self._restarts(f"; this round up to {event.restarts_needed} more")

    def _progress(self, event: object) -> None:
        """A sweep event of the round under way: the configuration's state in the table."""
        from workloads.sweep import LaneEvent, ServerApplied, ServerPhaseChanged, SlotStarted

        where = ""
        if isinstance(event, LaneEvent):
            where, event = f"lane {event.lane}: ", event.event
        if isinstance(event, SlotStarted):
            self._cell(event.slot.config, 4, where + ("restarting" if event.restart else "measuring"))
        elif isinstance(event, ServerPhaseChanged):
            self._cell(event.slot.config, 4, where + phase_text(event.phase, event.detail))
        elif isinstance(event, ServerApplied):
            self._cell(event.slot.config, 4, where + ("measuring" if event.applied.ok else "server FAILED"))

    def _round_finished(self, event) -> None:
        from workloads.search import decision_line

        space = self.space
        assert space is not None
        for obs, est in zip(event.observations, event.estimates, strict=True):
            label = space.label(obs.point)
            self.starts[label] = self.starts.get(label, 0) + int(obs.restarted)
            self.restarts += int(obs.restarted)
            self._cell(label, 1, str(est.n if est is not None else 0))
            self._cell(label, 2, tok_cell(est))
            self._cell(label, 3, str(self.starts[label]))
            if obs.failed:
                reason = obs.failed.splitlines()[0]
                self._cell(label, 4, Text(f"FAILED: {reason}"[:STATE_WIDTH], style="bold red"))
                self.notify(f"{label} FAILED (left out of the search): {reason}", severity="error", timeout=10)
            else:
                self._cell(label, 4, "measured")
        if event.decisions:
            self.decision = decision_line(space, event.decisions[-1]).strip().removeprefix("-> ")
            self._say(self.round_text + f"\nlast race: {escape(self.decision)}")
        self._restarts()

    def _finished(self, event) -> None:
        summary = event.summary
        restarts = summary.get("restarts") or {}
        self.restarts = int(restarts.get("used", self.restarts))
        self._restarts(f" ({restarts['share']:.0%})" if restarts.get("share") is not None else "")
        if event.status != "done":
            self._say(f"[yellow]{escape(interrupted_line(event.path))}[/yellow]")
        else:
            rounds = summary.get("rounds")
            self._say(f"[b]search done[/b] in {rounds} round(s)" +
                      (f"; last race: {escape(self.decision)}" if self.decision else ""))
        best, rival = summary.get("best"), summary.get("rival")
        if best is not None:
            self._cell(best["label"], 4, Text("BEST", style="bold green"))
        if rival is not None:
            self._cell(rival["label"], 4, "closest rival")
        if event.status == "done":
            self.best = best
            self.query_one("#best", Static).update(best_text(summary))
            if best is not None:  # off the space field, which takes a as text: a applies the best
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


def best_text(summary: dict) -> Text:
    """summary_lines (what ``ddtune search`` prints at the end) with the best and its verdict marked."""
    from workloads.search import summary_lines

    out = Text()
    for i, line in enumerate(summary_lines(summary)):
        style = ""
        if line.startswith("best:"):
            style = "bold"
        elif "not clear at 95%" in line:
            style = "yellow"
        elif "clear at 95%" in line:
            style = "green"
        elif line.startswith("run it:"):
            style = "bold cyan"
            line += "  (here: a)"
        out.append(("\n" if i else "") + line, style=style)
    return out

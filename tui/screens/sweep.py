"""The sweep screen: pick presets, run a quick sweep on the managed server, watch it fill in live.

The engine is workloads.sweep's SweepEngine (the same as `ddtune sweep`), driven from a worker; its
events come back as messages. A small matrix keeps it quick; `ddtune sweep` takes the full options.
With GPUs named the sweep runs in parallel lanes (workloads.sweep.lanes, as `ddtune sweep
--parallel`): one server per GPU beside the console's own, and one row per lane with its phase and
progress.
With the speculation-off baseline on, each run's greedy outputs are checked against the baseline's
(workloads.sweep.lossless): the "lossless" column says identical, DIFFERS (red, and named in the
final status line) or skipped, so a faster configuration that changed the answers cannot pass unseen.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Checkbox, DataTable, Footer, Header, Input, Label, SelectionList, Static
from textual.widgets.data_table import RowKey

import workloads.sweep as sweep
from backends.core import DdtuneError
from tui.console_sweep import marked
from tui.controller import ConsoleController
from tui.literal import cell, literal
from tui.widgets.lists import ListTable, ListSelection
from tui.widgets.ordered_input import OrderedInput
from tui.widgets.textbars import duration

CONTEXTS, CONCURRENCY, MAX_TOKENS = [60, 1024], [1, 8], 256


class SweepEventPosted(Message):
    def __init__(self, event: sweep.SweepEvent) -> None:
        super().__init__()
        self.event = event


class SweepScreen(Screen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="sweep.back")]
    DEFAULT_CSS = """
    SweepScreen #pick { height: auto; max-height: 12; margin: 0 1; }
    SweepScreen SelectionList { width: 36; height: auto; max-height: 10; border-title-color: $text-muted; }
    SweepScreen #side { width: 1fr; height: auto; padding: 0 0 0 2; }
    SweepScreen #side > * { margin-bottom: 1; }
    SweepScreen .row { height: 1; }
    SweepScreen .row Label { padding: 0 1 0 0; color: $text-muted; }
    SweepScreen #gpus { width: 1fr; max-width: 32; }
    SweepScreen #matrix { height: auto; color: $text-muted; }
    SweepScreen #status { height: auto; margin: 1 1; }
    SweepScreen #status.error { color: $error; }
    SweepScreen #slots { height: 1fr; }
    SweepScreen #lanes { height: auto; max-height: 10; display: none; }
    """

    def __init__(self, console: ConsoleController, presets: list[str], contexts: list[int] = CONTEXTS,
                 concurrency: list[int] = CONCURRENCY, max_tokens: int = MAX_TOKENS) -> None:
        super().__init__()
        self.console = console  # the sweep runs on its session (or beside it, in lanes)
        self.presets = presets
        self.matrix = (contexts, concurrency, max_tokens)
        self.running = False
        self.rows: dict[int, RowKey] = {}
        self.lane_rows: dict[int, RowKey] = {}
        self.board = sweep.SweepView(duration)  # what each event changes on this screen

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="pick"):
            yield ListSelection(*[(self._prompt(name, i < 2), name, i < 2) for i, name in enumerate(self.presets)],
                                     id="presets")
            with Vertical(id="side"):
                yield Checkbox("speculation-off baseline", value=True, id="baseline", compact=True,
                               tooltip="a run with speculation off first; each run's greedy answers are "
                                       "compared with its answers")
                with Horizontal(classes="row"):
                    yield Label("GPUs for parallel lanes")
                    yield OrderedInput(placeholder="this server", id="gpus", compact=True,
                                       tooltip="e.g. 0,1: one server per GPU beside this one (ddtune sweep "
                                               "--parallel); empty: sweep this console's server")
                contexts, concurrency, tokens = self.matrix
                yield Static(f"each run: contexts {contexts} x concurrency {concurrency}, {tokens} tokens, "
                             "no eval; all options: ddtune sweep --help", id="matrix")
                yield Button("Start sweep", variant="primary", id="start", compact=True)
        yield Static("pick presets and start; the server restarts only when the knobs change", id="status")
        yield ListTable(id="lanes", zebra_stripes=True)
        yield ListTable(id="slots", zebra_stripes=True)
        yield Footer(compact=True)

    @staticmethod
    def _prompt(name: str, picked: bool) -> Text:
        return Text(f"[{'x' if picked else ' '}] {name}")  # picked is readable without colour (Text: no markup)

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        picks = event.selection_list
        chosen = set(picks.selected)
        for index in range(picks.option_count):
            name = picks.get_option_at_index(index).value
            picks.replace_option_prompt_at_index(index, self._prompt(name, name in chosen))
        self._count(picks)

    @staticmethod
    def _count(picks: SelectionList) -> None:
        picks.border_title = f"presets: {len(picks.selected)} of {picks.option_count} picked"

    def on_mount(self) -> None:
        self._count(self.query_one("#presets", SelectionList))
        self.query_one("#slots", DataTable).add_columns(*self.board.slot_columns)
        self.query_one("#lanes", DataTable).add_columns(*self.board.lane_columns)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start" and not self.running:
            chosen = list(self.query_one("#presets", SelectionList).selected)
            if not chosen:
                self.notify("pick at least one preset", severity="warning")
                return
            from tui.console_sweep import sweep_spec

            try:  # a bad GPU list is refused here, before anything starts
                spec = sweep_spec(self.console, chosen, self.query_one("#baseline", Checkbox).value, *self.matrix,
                                  gpus=self.query_one("#gpus", Input).value.strip() or None)
            except DdtuneError as exc:
                text = exc.message + (f"; {exc.hint}" if exc.hint else "")
                self.notify(text, severity="error")
                self.query_one("#status", Static).update(literal(f"not started: {text}"))  # stays after the toast
                self.query_one("#status", Static).set_classes("error")
                return
            self.running = True
            event.button.disabled = True
            self.query_one("#status", Static).set_classes("")
            for ident in ("#slots", "#lanes"):  # a second sweep on this screen starts afresh
                self.query_one(ident, DataTable).clear()
            self.query_one("#lanes", DataTable).display = False
            self.rows, self.lane_rows, self.board = {}, {}, sweep.SweepView(duration)
            self.run_sweep(spec)

    @work(exclusive=True, group="sweep", exit_on_error=False)
    async def run_sweep(self, spec: sweep.SweepSpec) -> None:
        """The sweep runs on the console's session (or beside it, in lanes); this screen shows its events."""
        status = self.query_one("#status", Static)
        try:
            outcome = await sweep.run_sweep(spec, self._post_event)
            status.update(marked(outcome.verdict()))
            if outcome.server:
                self.notify(f"sweep: {outcome.server}", timeout=8)
        except DdtuneError as exc:
            status.update(Text(f"sweep refused: {exc}", "red"))
        finally:
            self.running = False
            if self.is_attached:  # not after Esc: the screen is gone
                self.query_one("#start", Button).disabled = False

    def _post_event(self, event: sweep.SweepEvent) -> None:  # from the engine, in this screen's worker
        self.post_message(SweepEventPosted(event))

    def on_sweep_event_posted(self, message: SweepEventPosted) -> None:
        """Draw what the event changed (workloads.sweep.SweepView says what)."""
        change = self.board(message.event)
        slots, lanes = self.query_one("#slots", DataTable), self.query_one("#lanes", DataTable)
        for index, cells in change.slot_rows:
            self.rows[index] = slots.add_row(*map(cell, cells))
        if change.lane_rows:
            lanes.display = True
        for index, cells in change.lane_rows:
            self.lane_rows[index] = lanes.add_row(*map(cell, cells))
        for index, column, mark in change.slot_cells:
            _update(slots, self.rows.get(index), column, marked([mark]) if mark.tone else mark.text)
        for index, column, text in change.lane_cells:
            _update(lanes, self.lane_rows.get(index), column, text)
        if change.status is not None:
            self.query_one("#status", Static).update(literal(change.status))
        for text, error in change.notices:
            self.notify(text, severity="error", timeout=10) if error else self.notify(text, timeout=8)


def _update(table: DataTable, row: RowKey | None, column: int, value: str | Text) -> None:
    """One cell of a row the table holds (None: a row it does not, as after a second sweep cleared it)."""
    if row is not None:
        table.update_cell(row, table.ordered_columns[column].key, cell(value), update_width=True)

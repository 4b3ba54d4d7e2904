"""The sweep screen: pick presets, run a quick sweep on the managed server, watch it fill in live.

The engine is workloads.sweep.SweepEngine (the same as `ddtune sweep`), driven from a worker; its
events come back as messages. A small matrix keeps it quick; `ddtune sweep` takes the full options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Checkbox, DataTable, Footer, Header, SelectionList, Static
from textual.widgets.data_table import RowKey

from tui.widgets.textbars import duration

if TYPE_CHECKING:
    from tui.app import DdtuneApp

CONTEXTS, CONCURRENCY, MAX_TOKENS = [60, 1024], [1, 8], 256


class SweepEventPosted(Message):
    def __init__(self, event) -> None:
        super().__init__()
        self.event = event


class SweepScreen(Screen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="sweep.back")]
    DEFAULT_CSS = """
    SweepScreen #pick { height: auto; max-height: 12; }
    SweepScreen SelectionList { width: 40; height: auto; max-height: 10; }
    SweepScreen #side { width: 1fr; height: auto; padding: 0 2; }
    SweepScreen #status { height: auto; margin: 1 0; }
    SweepScreen DataTable { height: 1fr; }
    """

    def __init__(self, presets: list[str], contexts: list[int] = CONTEXTS, concurrency: list[int] = CONCURRENCY,
                 max_tokens: int = MAX_TOKENS) -> None:
        super().__init__()
        self.presets = presets
        self.matrix = (contexts, concurrency, max_tokens)
        self.running = False
        self.rows: dict[int, RowKey] = {}
        self.best: dict[int, float] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="pick"):
            yield SelectionList[str](*[(self._prompt(name, i < 2), name, i < 2) for i, name in enumerate(self.presets)],
                                     id="presets")
            with Vertical(id="side"):
                yield Checkbox("add a speculation-off baseline", value=True, id="baseline")
                contexts, concurrency, tokens = self.matrix
                yield Static(f"matrix: contexts {contexts}, concurrency {concurrency}, {tokens} tokens, "
                             "no eval\n(full options: ddtune sweep --help)")
                yield Button("Start sweep", variant="primary", id="start")
        yield Static("pick presets and start; the server restarts only when the knobs change", id="status")
        yield DataTable(id="slots", zebra_stripes=True)
        yield Footer()

    @staticmethod
    def _prompt(name: str, picked: bool) -> Text:
        return Text(f"[{'x' if picked else ' '}] {name}")  # picked is readable without colour (Text: no markup)

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        picks = event.selection_list
        chosen = set(picks.selected)
        for index in range(picks.option_count):
            name = picks.get_option_at_index(index).value
            picks.replace_option_prompt_at_index(index, self._prompt(name, name in chosen))
        picks.border_title = f"{len(chosen)} of {picks.option_count} picked"

    def on_mount(self) -> None:
        self.query_one("#presets", SelectionList).border_title = f"2 of {len(self.presets)} picked"
        self.query_one("#slots", DataTable).add_columns("#", "config", "status", "best tok/s", "accept", "note")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start" and not self.running:
            chosen = list(self.query_one("#presets", SelectionList).selected)
            if not chosen:
                self.notify("pick at least one preset", severity="warning")
                return
            self.running = True
            event.button.disabled = True
            self.run_sweep(chosen, self.query_one("#baseline", Checkbox).value)

    @work(exclusive=True, group="sweep", exit_on_error=False)
    async def run_sweep(self, presets: list[str], baseline: bool) -> None:
        """The controller runs the sweep on the console's session; this screen shows its events."""
        from backends.errors import DdtuneError

        console = cast("DdtuneApp", self.app).controller
        status = self.query_one("#status", Static)
        if console is None:  # the app without a managed server (no config): nothing to sweep
            status.update("[red]sweep refused: no managed server[/red]")
            self.running = False
            return
        try:
            contexts, concurrency, max_tokens = self.matrix
            _path, verdict, done = await console.run_sweep(presets, baseline, contexts, concurrency, max_tokens,
                                                           self._post_event)
            status.update(verdict)
            if done:
                self.notify(f"sweep: {done}", timeout=8)
        except DdtuneError as exc:
            status.update(f"[red]sweep refused: {exc}[/red]")
        finally:
            self.running = False

    def _post_event(self, event: object) -> None:  # from the engine, in this screen's worker
        self.post_message(SweepEventPosted(event))

    def on_sweep_event_posted(self, message: SweepEventPosted) -> None:
        from workloads import sweep_events as s
        from workloads.metrics import cell_acceptance

        event, table, status = message.event, self.query_one("#slots", DataTable), self.query_one("#status", Static)
        if isinstance(event, s.SweepStarted):
            for slot in event.slots:
                self.rows[slot.index] = table.add_row(str(slot.index + 1), slot.config,
                                                      "done" if slot.index in event.done else "waiting", "-", "-", "")
            status.update(f"sweep {event.path}: {len(event.slots)} runs, ETA {duration(event.eta_s)}")
        elif isinstance(event, s.SlotStarted):
            self._cell(event.slot.index, 2, "restarting" if event.restart else "running")
            status.update(f"run {event.slot.index + 1}: {event.slot.config}, ETA {duration(event.eta_s)}")
        elif isinstance(event, s.ServerPhaseChanged):
            self._cell(event.slot.index, 5, f"{event.phase} {event.detail}"[:40])
        elif isinstance(event, s.CellFinished):
            self._cell(event.slot.index, 2, f"cells {event.cells_done}/{event.cells_total}")
            best = max(float(event.cell.get("output_tok_s") or 0), self.best.get(event.slot.index, 0.0))
            self.best[event.slot.index] = best
            self._cell(event.slot.index, 3, f"{best:.0f}")
            accept = cell_acceptance(event.cell)
            self._cell(event.slot.index, 4, "-" if accept is None else f"{accept:.2f}")
            status.update(f"run {event.slot.index + 1}: cell {event.cells_done}/{event.cells_total}, "
                          f"ETA {duration(event.eta_s)}")
        elif isinstance(event, s.SlotFinished):
            self._cell(event.record.slot.index, 2, event.record.status)
            self._cell(event.record.slot.index, 5, (event.record.reason or "")[:60])

    def _cell(self, index: int, column: int, value: str) -> None:
        table = self.query_one("#slots", DataTable)
        if index in self.rows:
            table.update_cell(self.rows[index], table.ordered_columns[column].key, value)

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
from backends.core import DdtuneError, UsageError
from tui.controller import ConsoleController
from tui.literal import cell, literal
from tui.widgets.lists import ListTable, ListSelection
from tui.widgets.ordered_input import OrderedInput
from tui.widgets.textbars import duration

CONTEXTS, CONCURRENCY, MAX_TOKENS = [60, 1024], [1, 8], 256


class SweepEventPosted(Message):
    def __init__(self, event) -> None:
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
        self.best: dict[int, float] = {}

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
        self.query_one("#slots", DataTable).add_columns("#", "config", "status", "best tok/s", "accept", "lossless",
                                                          "note")
        self.query_one("#lanes", DataTable).add_columns("lane", "GPU", "port", "phase", "run", "progress")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start" and not self.running:
            chosen = list(self.query_one("#presets", SelectionList).selected)
            if not chosen:
                self.notify("pick at least one preset", severity="warning")
                return
            text = self.query_one("#gpus", Input).value.strip()
            gpus = None
            if text:
                try:
                    gpus = sweep.parse_gpus(text)
                except UsageError as exc:
                    self.notify(f"{exc.message}; {exc.hint}", severity="error")
                    self.query_one("#status", Static).update(  # stays on screen after the toast
                        literal(f"not started: {exc.message}; {exc.hint}"))
                    self.query_one("#status", Static).set_classes("error")
                    return
            self.running = True
            event.button.disabled = True
            self.query_one("#status", Static).set_classes("")
            for ident in ("#slots", "#lanes"):  # a second sweep on this screen starts afresh
                self.query_one(ident, DataTable).clear()
            self.query_one("#lanes", DataTable).display = False
            self.rows, self.lane_rows, self.best = {}, {}, {}
            self.run_sweep(chosen, self.query_one("#baseline", Checkbox).value, gpus)

    @work(exclusive=True, group="sweep", exit_on_error=False)
    async def run_sweep(self, presets: list[str], baseline: bool, gpus: tuple[str, ...] | None = None) -> None:
        """The controller runs the sweep on the console's session; this screen shows its events."""
        from tui.console_sweep import run_console_sweep

        status = self.query_one("#status", Static)
        try:
            contexts, concurrency, max_tokens = self.matrix
            _path, verdict, done = await run_console_sweep(self.console, presets, baseline, contexts, concurrency,
                                                           max_tokens, self._post_event, gpus)
            status.update(verdict)  # markup of the console's own: sweep_verdict escapes what it embeds
            if done:
                self.notify(f"sweep: {done}", timeout=8)
        except DdtuneError as exc:
            status.update(Text(f"sweep refused: {exc}", "red"))
        finally:
            self.running = False
            if self.is_attached:  # not after Esc: the screen is gone
                self.query_one("#start", Button).disabled = False

    def _post_event(self, event: object) -> None:  # from the engine, in this screen's worker
        self.post_message(SweepEventPosted(event))

    def on_sweep_event_posted(self, message: SweepEventPosted) -> None:
        event, table, status = message.event, self.query_one("#slots", DataTable), self.query_one("#status", Static)
        if isinstance(event, (sweep.LanesStarted, sweep.LaneEvent, sweep.LaneMoved, sweep.LaneClosed)):
            event = self._lane_event(event)
            if event is None:
                return
        if isinstance(event, sweep.SweepStarted):
            for slot in event.slots:
                self.rows[slot.index] = table.add_row(str(slot.index + 1), cell(slot.config),
                                                      "done" if slot.index in event.done else "waiting", "-", "-", "")
            status.update(literal(f"sweep {event.path}: {len(event.slots)} runs, ETA {duration(event.eta_s)}"))
        elif isinstance(event, sweep.SlotStarted):
            self._cell(event.slot.index, 2, "restarting" if event.restart else "running")
            status.update(literal(f"run {event.slot.index + 1}: {event.slot.config}, ETA {duration(event.eta_s)}"))
        elif isinstance(event, sweep.ServerPhaseChanged):
            self._cell(event.slot.index, 6, f"{event.phase} {event.detail}"[:40])
        elif isinstance(event, sweep.CellFinished):
            self._cell(event.slot.index, 2, f"cells {event.cells_done}/{event.cells_total}")
            best = max(float(event.cell.get("output_tok_s") or 0), self.best.get(event.slot.index, 0.0))
            self.best[event.slot.index] = best
            self._cell(event.slot.index, 3, f"{best:.0f}")
            accept = sweep.cell_acceptance(event.cell)
            self._cell(event.slot.index, 4, "-" if accept is None else f"{accept:.2f}")
            status.update(f"run {event.slot.index + 1}: cell {event.cells_done}/{event.cells_total}, "
                          f"ETA {duration(event.eta_s)}")
        elif isinstance(event, sweep.LosslessChecked):
            self._cell(event.slot.index, 5, lossless_cell(event.result))
            if event.result.get("status") == "compared" and event.result.get("diverged"):
                self.notify(f"{event.slot.config}: {sweep.describe_lossless(event.result)}", severity="error",
                            timeout=10)
        elif isinstance(event, sweep.SlotFinished):
            self._cell(event.record.slot.index, 2, event.record.status)
            self._cell(event.record.slot.index, 6, (event.record.reason or "")[:60])

    def _lane_event(self, event):
        """Fill the lane's row; return the event inside a LaneEvent for the slot table (else None)."""
        lanes = self.query_one("#lanes", DataTable)
        if isinstance(event, sweep.LanesStarted):
            lanes.display = True
            for lane in event.lanes:
                self.lane_rows[lane.index] = lanes.add_row(str(lane.index), cell(lane.visible_devices),
                                                           str(lane.port), "waiting", "-", "-")
            for note in event.notes:
                self.notify(note, timeout=8)
            return None
        if isinstance(event, sweep.LaneClosed):
            self._lane_cell(event.lane, 3, event.what[:40])
            return None
        if isinstance(event, sweep.LaneMoved):
            self._lane_cell(event.lane, 2, str(event.new_port))
            self.notify(f"lane {event.lane}: port {event.old_port} was taken; moved to {event.new_port}", timeout=8)
            return None
        inner, index = event.event, event.lane
        if isinstance(inner, sweep.SlotStarted):
            slot = inner.slot
            self._lane_cell(index, 3, "restarting" if inner.restart else "running")
            self._lane_cell(index, 4, f"{slot.index + 1} {slot.config} r{slot.repeat}")
            self._lane_cell(index, 5, "-")
        elif isinstance(inner, sweep.ServerPhaseChanged):
            self._lane_cell(index, 3, f"{inner.phase} {inner.detail}"[:40])
        elif isinstance(inner, sweep.ServerApplied):
            self._lane_cell(index, 3, "measuring" if inner.applied.ok else "server FAILED")
        elif isinstance(inner, sweep.CellFinished):
            self._lane_cell(index, 5, f"cells {inner.cells_done}/{inner.cells_total}")
        elif isinstance(inner, sweep.SlotFinished):
            self._lane_cell(index, 3, inner.record.status)
        return inner

    def _lane_cell(self, lane: int, column: int, value: str) -> None:
        table = self.query_one("#lanes", DataTable)
        if lane in self.lane_rows:
            table.update_cell(self.lane_rows[lane], table.ordered_columns[column].key, cell(value),
                              update_width=True)

    def _cell(self, index: int, column: int, value: str | Text) -> None:
        table = self.query_one("#slots", DataTable)
        if index in self.rows:
            table.update_cell(self.rows[index], table.ordered_columns[column].key, cell(value), update_width=True)


def lossless_cell(result: dict) -> Text:
    """A slot's lossless check in the table: ``identical 8/8``, ``DIFFERS 3/8 @12,40,7…`` in red (where
    the first differing tokens are, three at most), ``baseline 8 prompts`` (recorded), or ``skipped: why``."""
    status = result.get("status")
    if status == "recorded":
        return Text(f"baseline {result.get('prompts')} prompts")
    if status == "compared":
        n, k = result.get("prompts"), result.get("diverged")
        if not k:
            return Text(f"identical {n}/{n}", style="green")
        first = [str(p) for p in result.get("first") or () if p is not None]
        at = ",".join(first[:3]) + ("…" if len(first) > 3 else "")
        return Text(f"DIFFERS {k}/{n}" + (f" @{at}" if at else ""), style="bold red")
    if status == "error":
        return Text(f"skipped: {result.get('error')}"[:40], style="yellow")
    return Text(f"skipped: {status}")

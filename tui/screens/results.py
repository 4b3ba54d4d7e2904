"""Past runs (bench, eval, load, sweeps, searches): Enter opens one (its report), Space picks two to
compare on what they share (workloads.report's RunRow.compare)."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from tui.literal import cell, literal
from tui.widgets.lists import ListTable
from workloads.report import RunRow, list_runs


class ResultsScreen(Screen):
    DEFAULT_CSS = """
    ResultsScreen #runs { height: 1fr; }
    ResultsScreen #run-line { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    ResultsScreen #compare { height: auto; max-height: 50%; }
    """
    BINDINGS = [Binding("escape,r", "app.pop_screen", "Back", id="results.back"),
                Binding("space", "pick", "Pick", id="results.pick")]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[RunRow] = []
        self.picked: list[RunRow] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Runs (newest first). Enter opens a run; Space picks two runs to compare.", id="results-help")
        yield ListTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Static("", id="run-line")  # the highlighted run whole, wrapped: at 80x24 the table cuts it
        yield ListTable(id="compare", zebra_stripes=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#runs", DataTable).add_columns("run", "kind", "status", "summary", "knobs")
        self.query_one("#compare", DataTable).add_columns(*RunRow.compare_head)
        self.load_runs()

    @work(thread=True, exclusive=True)
    def load_runs(self) -> None:
        rows = list_runs()
        self.app.call_from_thread(self._show, rows)

    def _show(self, rows: list[RunRow]) -> None:
        self.rows = rows
        table = self.query_one("#runs", DataTable)
        table.clear()
        for row in rows:
            table.add_row(*map(cell, (row.id, row.kind, row.status, row.summary, row.knobs[:40])))
        if not rows:
            self.query_one("#results-help", Static).update(
                "No runs yet. The console records its coding load (l) and its sweeps (s) here, as do "
                "`ddtune bench`, `load`, `eval` and `sweep`.")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "runs" and 0 <= event.cursor_row < len(self.rows):
            row = self.rows[event.cursor_row]
            self.query_one("#run-line", Static).update(literal(f"{row.id}: {row.summary}; {row.knobs}"))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "runs" or not self.rows:
            return
        from tui.screens.run_detail import RunDetailScreen

        self.app.push_screen(RunDetailScreen(self.rows[event.cursor_row]))

    def action_pick(self) -> None:
        table = self.query_one("#runs", DataTable)
        if not self.rows:
            return
        row = self.rows[table.cursor_row]
        self.picked = (self.picked + [row])[-2:]
        if len(self.picked) == 2:
            a, b = self.picked
            comp = self.query_one("#compare", DataTable)
            found = a.compare(b)
            comp.clear(columns=True)
            comp.add_columns(*found.head)
            for line in found.rows:
                comp.add_row(*map(cell, line))
            comp.border_title = literal(f"A={a.id}  B={b.id}")
            comp.border_subtitle = literal(found.shared)
            self.notify(found.shared, severity="information" if found.rows else "warning", markup=False)
        else:
            self.notify(f"picked {row.id}; pick one more")

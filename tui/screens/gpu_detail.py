"""The GPU detail (g, or a click on the GPU panel): a line per GPU, then every process on them, as
nvitop lists them: GPU, pid, user, GPU memory, SM utilisation and command, the console's server
(magenta) and a parallel run's lane servers (cyan) marked. It follows the panel's view live (one
sample a second); nothing here does I/O. Commands are run data: shown as text, never markup."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from tui.literal import cell
from tui.views import GpuProcRow, GpuView
from tui.widgets.gpu_panel import GpuPanel
from tui.widgets.lists import ListTable

COLUMNS = ("GPU", "PID", "USER", "GPU MEM", "SM", "OWNER", "COMMAND")
OWNER_STYLE = {"server": "magenta"}  # a lane's label: cyan, as on the panel


class GpuLines(GpuPanel):
    ONE_LINE_WHEN_NARROW = False


def row_cells(row: GpuProcRow) -> tuple[Text, ...]:
    style = OWNER_STYLE.get(row.owner, "cyan" if row.owner else "")
    mem = "-" if row.mem_gib is None else f"{row.mem_gib:.1f}G"
    util = "-" if row.util is None else f"{row.util}%"
    texts = (str(row.gpu), str(row.pid), row.user, mem, util, row.owner or "-", row.command)
    return tuple(Text(t, style=style if i in (1, 5) else "", no_wrap=True, end="") for i, t in enumerate(texts))


class GpuDetail(Screen):
    BINDINGS = [Binding("escape,g", "app.pop_screen", "Back", id="gpu_detail.back")]
    DEFAULT_CSS = """
    GpuDetail #gpus { padding: 0 1; border: round $primary 50%; border-title-color: $text-muted; }
    GpuDetail #procs { height: 1fr; }
    GpuDetail #none { padding: 0 1; color: $text-muted; height: auto; }
    """

    def __init__(self, source: GpuPanel) -> None:
        super().__init__()
        self.source = source  # the main screen's panel: its view is the latest sample
        self.shown: tuple[GpuProcRow, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield GpuLines(id="gpus")
        yield Static("", id="none")
        yield ListTable(id="procs", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#gpus").border_title = "GPUs"
        table = self.query_one("#procs", ListTable)
        table.add_columns(*COLUMNS)
        table.border_title = "processes"
        self.watch(self.source, "view", self.show)  # called now, and on each new sample
        table.focus()

    def show(self, view: GpuView) -> None:
        self.query_one("#gpus", GpuLines).view = view
        if view.processes == self.shown:
            return
        self.shown = view.processes
        table = self.query_one("#procs", ListTable)
        picked = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value if table.row_count else None
        table.clear()
        for row in view.processes:
            table.add_row(*row_cells(row), key=f"{row.gpu}:{row.pid}")
        keys = [f"{r.gpu}:{r.pid}" for r in view.processes]
        if picked in keys:
            table.move_cursor(row=keys.index(picked))
        none = self.query_one("#none", Static)
        none.display = not view.processes
        none.update(cell("no process holds GPU memory" if view.available
                         else f"no NVIDIA GPU here: {view.reason or 'unavailable'}"))

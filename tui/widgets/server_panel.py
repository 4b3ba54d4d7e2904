"""The server panel: who is serving, which startup phase, and whether the knobs took effect."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive

from backends.core import Phase
from tui.literal import literal
from tui.views import ServerView
from tui.widgets.diffed import DiffedWidget
from tui.widgets.textbars import bar, duration

PHASE_STYLE = {
    Phase.READY: "bold green", Phase.FAILED: "bold red", Phase.IDLE: "grey50", Phase.STOPPED: "bold yellow",
    Phase.STOPPING: "yellow", Phase.WAITING: "yellow", Phase.STARTING_PROCESS: "yellow",
}


def remaining(eta_s: float | None) -> str:
    """The time left of a start, from this server's earlier starts (``eta_s``: seconds left at the
    latest report; None: no earlier start to go by)."""
    if eta_s is None:
        return "no history yet"
    if eta_s < 1:
        return "past the usual time"
    return f"~{duration(eta_s)} left"


class ServerPanel(DiffedWidget):
    """Renders a ServerView. The screen assigns `view`; nothing here does I/O."""

    DEFAULT_CSS = "ServerPanel { height: auto; }"
    view: reactive[ServerView] = reactive(ServerView, repaint=False)  # watch_view repaints what changed
    sim_wrong: float | None = None  # on the simulator: the share of answers it gets wrong on purpose

    def watch_view(self, old: ServerView, new: ServerView) -> None:
        # Re-layout only when the panel's height may change (fatal/note lines, knob rows); else only
        # the cells that changed (a start's elapsed seconds) are drawn again.
        shape = lambda v: (bool(v.fatal), bool(v.note), bool(v.alarm), len(v.knobs), v.phase)
        if shape(old) != shape(new):
            self.refresh(layout=True)
        else:
            self.repaint_changed()

    def render(self) -> Group:
        v = self.view
        # the head keeps to one row (its height must not jump when the uptime grows: at 80x24 a
        # wrapped line pushed the knob rows off screen); the phase too, on a narrow screen
        head = Text(no_wrap=True, overflow="ellipsis")
        if v.simulated:
            head.append(" SIMULATED ", "bold black on yellow")
            head.append(" ")
        head.append(f"{v.backend} ", "bold")
        head.append(f"  pid {v.pid or '-'}  {v.url or ''}")
        if v.version:
            head.append(f"  {v.engine} {v.version}", "grey70")
        if v.uptime_s is not None and v.phase == Phase.READY:  # whole minutes: a ready server's age, not a clock
            head.append(f"  up {duration(v.uptime_s) if v.uptime_s >= 60 else '<1m'}", "grey70")

        narrow = self.screen.has_class("-narrow")  # at 80 columns every row counts: one row, cut
        phase = Text(no_wrap=narrow, overflow="ellipsis" if narrow else "fold")
        phase.append(f"{v.phase}", PHASE_STYLE.get(v.phase, "bold cyan"))
        if v.detail:
            phase.append(f"  {v.detail}")
        if v.simulated and self.sim_wrong is not None and v.phase == Phase.READY:
            phase.append(f"  sim: {self.sim_wrong:.0%} of answers wrong on purpose", "yellow")
        if v.progress is not None and v.phase not in (Phase.READY, Phase.FAILED):
            phase.append("  ")
            phase.append_text(bar(v.progress, 16, "cyan"))
        if v.elapsed_s is not None and v.phase not in (Phase.READY, Phase.IDLE, Phase.FAILED):
            phase.append(f"  {duration(v.elapsed_s)} elapsed")
            if v.eta_s is not None or not v.attached:  # an attach has no start of its own to time
                phase.append(f" · {remaining(v.eta_s)}", "grey70")
        parts: list = [head, phase]
        if v.alarm:
            parts.append(Text(f"⚠ ACCEPTANCE COLLAPSE: {v.alarm}", "bold white on red",
                              no_wrap=narrow, overflow="ellipsis" if narrow else "fold"))
        if v.fatal:
            parts.append(Text(f"✗ {v.fatal}", "bold red", no_wrap=narrow, overflow="ellipsis" if narrow else "fold"))
        if v.note:
            parts.append(Text(v.note.splitlines()[0], "grey70", no_wrap=True, overflow="ellipsis"))
        for row in v.knobs:
            if row.verified is False:
                parts.append(Text(f"✗ {row.name}: requested {row.requested}, server says {row.effective}",
                                  "bold white on red", no_wrap=narrow, overflow="ellipsis" if narrow else "fold"))
        if v.knobs:
            table = Table.grid(padding=(0, 2))
            table.add_column("knob", style="bold")
            table.add_column("requested")
            table.add_column("server says")
            table.add_column("")
            for row in v.knobs:
                if row.requested == "none" and row.effective is None:
                    table.add_row(literal(row.name), "none", "-", Text("not set", "grey50"))
                    continue
                mark = {True: Text("✓ verified", "green"), False: Text("✗ MISMATCH", "bold red"),
                        None: Text("… unverified", "grey50")}[row.verified]
                table.add_row(literal(row.name), literal(row.requested),  # Text: what the server says is no markup
                              literal(row.effective if row.effective is not None else "?"), mark)
            parts.append(table)
        return Group(*parts)

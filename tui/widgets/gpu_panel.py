"""The GPU panel: one line per GPU, the server's share of memory (magenta), the lane servers' of a
parallel sweep or search (cyan, one line each naming its pid), others' (blue), utilisation history."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive

from tui.views import GpuView
from tui.widgets.diffed import DiffedWidget
from tui.widgets.textbars import sparkline, stacked_bar


def one_line(v: GpuView) -> Text:
    """All GPUs in one row (80x24): count and model, memory, utilisation range, the server's share."""
    line = Text(no_wrap=True, overflow="ellipsis")
    if not v.available:
        line.append("gpu: none here", "bold")
        line.append(f" ({v.reason or 'unavailable'})", "grey62")
        return line
    rows = v.rows
    names = {g.name.removeprefix("NVIDIA ") for g in rows}
    line.append(f"gpu {len(rows)}x {'/'.join(sorted(names))[:16]} ", "bold")
    used, total = sum(g.used_gib for g in rows), sum(g.total_gib for g in rows)
    line.append(f"mem {used:.0f}/{total:.0f}G ")
    utils = [g.util for g in rows if g.util is not None]
    if utils:
        line.append(f"util {min(utils)}-{max(utils)}% " if len(set(utils)) > 1 else f"util {utils[0]}% ", "bold")
    server = sum(g.server_gib for g in rows)
    if server:
        line.append(f"· server {server:.0f}G", "magenta")
    if v.lanes:
        line.append(f" · {len(v.lanes)} lanes {sum(g.lane_gib for g in rows):.0f}G", "cyan")
    return line


class GpuPanel(DiffedWidget):
    """One sample a second: only the cells that changed (a power figure, the host's CPU) are drawn again."""

    DEFAULT_CSS = "GpuPanel { height: auto; }"
    view: reactive[GpuView] = reactive(lambda: GpuView(available=False, reason="sampling…"), repaint=False)
    ONE_LINE_WHEN_NARROW = True  # the main screen at 80 columns; the GPU detail always draws a line per GPU

    class Opened(Message):
        """The operator asked for the GPU detail (a click on the panel)."""

    def on_click(self) -> None:
        self.post_message(self.Opened())

    def watch_view(self, old: GpuView, new: GpuView) -> None:
        shape = lambda v: (v.available, len(v.rows), bool(v.server_summary), len(v.lanes), bool(v.host))
        if shape(old) != shape(new):  # what sets the height
            self.refresh(layout=True)
        else:
            self.repaint_changed()

    def _one_line(self, v: GpuView) -> Text:
        return one_line(v)

    def render(self) -> Group | Text:
        v = self.view
        if self.ONE_LINE_WHEN_NARROW and self.screen.has_class("-narrow"):
            return self._one_line(v)
        if not v.available:
            return Group(Text(f"no NVIDIA GPU here: {v.reason or 'unavailable'}", "grey62"),
                         *( [Text(v.host, "grey62")] if v.host else []))
        width = self.size.width or 80
        bar_w = max(8, min(24, width - 62))
        spark_w = max(6, min(20, width - 56 - bar_w))
        lines = []
        for g in v.rows:
            line = Text()
            line.append(f"{g.index} ", "bold")
            line.append(f"{g.name.removeprefix('NVIDIA ')[:10]:<10} ")
            others = max(g.used_gib - g.server_gib - g.lane_gib, 0.0)
            total = g.total_gib or 1.0
            line.append_text(stacked_bar([(g.server_gib / total, "magenta"), (g.lane_gib / total, "cyan"),
                                          (others / total, "blue")], bar_w))
            line.append(f" {g.used_gib:6.1f}/{g.total_gib:.0f}G ")
            util = "-" if g.util is None else f"{g.util:3d}%"
            line.append(f"{util} ", "bold")
            line.append(sparkline(g.util_history, spark_w), "green")
            if g.power_w is not None:
                line.append(f" {g.power_w:4.0f}W")
            if g.temp_c is not None:
                line.append(f" {g.temp_c}°C")
            lines.append(line)
        if v.server_summary:
            lines.append(Text(v.server_summary, "magenta"))
        lines.extend(Text(lane, "cyan") for lane in v.lanes)
        if v.host:
            lines.append(Text(v.host, "grey62"))
        return Group(*lines)

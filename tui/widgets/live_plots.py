"""Live tok/s and acceptance plots from bounded deques, redrawn at most twice a second."""

from __future__ import annotations

from collections import deque

from textual.containers import Horizontal
from textual_plotext import PlotextPlot


class CachedPlot(PlotextPlot):
    """A PlotextPlot that builds its figure only when the data, the size or the theme changed.

    PlotextPlot.render builds the whole figure (tens of ms) on every repaint, and a repaint comes
    with any layout refresh of the screen (a log batch, a panel growing a line), not only when the
    plot changed. ``changed()`` marks new data; everything else reuses the last build."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._version = 0
        self._built: tuple[tuple, object] | None = None

    def changed(self) -> None:
        self._version += 1
        self.refresh()

    def render(self):  # noqa: ANN201  (whatever PlotextPlot.render returns)
        key = (self._version, self.size.width, self.size.height, self.app.theme)
        if self._built is None or self._built[0] != key:
            self._built = (key, super().render())
        return self._built[1]


class LivePlots(Horizontal):
    DEFAULT_CSS = "LivePlots { height: 1fr; min-height: 8; } LivePlots PlotextPlot { width: 1fr; }"

    def __init__(self, span_s: float = 300.0, maxlen: int = 600, **kwargs) -> None:
        super().__init__(**kwargs)
        self.span_s = span_s
        self.tok_s: deque[tuple[float, float]] = deque(maxlen=maxlen)
        self.accept: deque[tuple[float, float]] = deque(maxlen=maxlen)
        self.server_tok_s: deque[tuple[float, float]] = deque(maxlen=maxlen)
        self.markers: deque[tuple[float, str]] = deque(maxlen=20)
        self._dirty = True
        self.t0: float | None = None

    def compose(self):
        yield CachedPlot(id="plot-toks")
        yield CachedPlot(id="plot-accept")

    def on_mount(self) -> None:
        self.redraw()  # then the app's tick redraws us every 2 s at most (a plotext build costs tens of ms)
        self.redraw()

    def _rel(self, t: float) -> float:
        if self.t0 is None:
            self.t0 = t
        return t - self.t0

    def add_load_point(self, t: float, tok_s: float, accept_len: float | None) -> None:
        self.tok_s.append((self._rel(t), tok_s))
        if accept_len is not None:
            self.accept.append((self._rel(t), accept_len))
        self._dirty = True

    def add_server_point(self, t: float, gen_throughput: float, accept_len: float | None) -> None:
        self.server_tok_s.append((self._rel(t), gen_throughput))
        self._dirty = True

    def mark(self, t: float, label: str) -> None:
        self.markers.append((self._rel(t), label))
        self._dirty = True

    def redraw(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        # Axes that mean something: tok/s from 0, acceptance from 1.0 (no speculation) up, so a
        # drafter collapsing to 1.0 reads as a fall to the floor, not as one more wiggle.
        self._draw(self.query_one("#plot-toks", CachedPlot), "tok/s",
                   [("client", self.tok_s, "cyan"), ("server", self.server_tok_s, "grey")], floor=0.0)
        self._draw(self.query_one("#plot-accept", CachedPlot), "accept length",
                   [("client", self.accept, "magenta")], floor=1.0)

    def _draw(self, widget: CachedPlot, title: str, series, floor: float = 0.0) -> None:
        plt = widget.plt
        plt.clear_figure()
        plt.title(title)
        last = max((s[-1][0] for _, s, _ in series if s), default=0.0)
        lo = max(0.0, last - self.span_s)
        drawn = False
        top = floor
        for label, points, color in series:
            pts = [(x, y) for x, y in points if x >= lo]
            if pts:
                plt.plot([x for x, _ in pts], [y for _, y in pts], label=label, color=color, marker="braille")
                drawn = True
                top = max(top, max(y for _, y in pts))
        if drawn:
            plt.ylim(floor, floor + (top - floor) * 1.3 if top > floor else floor + 1.0)  # room for the legend
        for x, _label in self.markers:
            if x >= lo:
                plt.vline(x, "yellow")
        if not drawn:
            plt.text("waiting for data", 0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
        plt.xlabel("s")
        widget.changed()

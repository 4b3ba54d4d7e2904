"""Live tok/s and acceptance plots from bounded deques, redrawn at most every 2 s (the app's tick).

tok/s: the client's rolling (5 s) rate, its 1 s rate faint behind it, the server's own `Decode
batch` throughput, and the no-speculation baseline as a reference line when one is known. Both
plots keep the last 10 minutes across restarts; each restart to other knobs draws a marker
labelled with the change (``window 2048 -> 1024``).

acceptance: the client's rolling figure, named for where it came from (``requests``: their own spec
fields; ``counters``: the server's /metrics over the window, as on chat before sglang 0.5.19;
``log``: the server's decode lines in the window), and the server log's own ``accept len``."""

from __future__ import annotations

from collections import deque

from textual.color import Color
from textual.containers import Horizontal
from textual_plotext import PlotextPlot

from tui.marker_labels import Placed, place

SPAN_S = 600.0        # the last 10 minutes
MAX_POINTS = 3000     # per series, whatever the rate of points (a fast server logs several Decode lines a second)
FAINT = (0, 95, 105)  # the 1 s rate: a dim cyan behind the 5 s line
MARKER = (230, 190, 40)    # restart markers and their labels (yellow)
REFERENCE = (90, 190, 90)  # the no-speculation baseline (green)
SOURCE_LABEL = {"request": "requests", "counters": "counters", "log": "log"}  # the client line's source
LEGEND_ROWS = 12      # a shorter plot (80x24) names its lines in the title: a legend would cover the data


def tok_s_title(width: int, legend: bool, approx: bool, source: str | None = None) -> str:
    """The longest title that fits (plotext drops a title wider than the plot): without a legend it
    names the lines by colour and, where the title still fits beside the y axis' labels, the load's
    prompt source; ``approx`` says the rate was counted by chunks."""
    notes = (" (approx: counted by chunks)", " (approx)") if approx else ("",)
    lines = ("",) if legend else (": client cyan, server grey", ": cyan client")
    fits = [f"tok/s{n}{line}" for line in lines for n in notes]
    if width <= 0:  # not laid out yet: the resize that follows redraws with the real width
        return fits[0]
    if source and not legend:  # centred over the plotting area: the axis labels' columns are not free
        short = source if len(source) <= 16 else source[:13] + "..."
        named = [f"tok/s{n} ({name}): cyan client" for name in (source, short) for n in notes]
        fits = [t for t in named if len(t) <= width - 12] + fits
    return next((t for t in fits if len(t) <= width - 2), f"tok/s{notes[-1]}")


def accept_title(width: int, source: str | None) -> str:
    """``accept length``, naming the load's prompt source (cut to fit beside the axis labels) where
    there is room: on a short plot the legend that names it is left out."""
    room = width - 12 - len("accept length ()")
    if not source or room < 6:
        return "accept length"
    return f"accept length ({source if len(source) <= room else source[:room - 3] + '...'})"


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


Series = deque[tuple[float, float]]


def thin(points: list[tuple[float, float]], lo: float, hi: float, columns: int) -> list[tuple[float, float]]:
    """At most the lowest and the highest point of each of ``columns`` slices of ``[lo, hi]``, in
    time order: what a line through all of them draws at that resolution (a braille cell is two dots
    wide), for a build that costs the same after ten minutes of a fast server's points as after one."""
    if len(points) <= 2 * columns or hi <= lo:
        return points
    per = (hi - lo) / columns
    kept: list[tuple[float, float]] = []
    bucket: list[tuple[float, float]] = []
    at = 0
    for point in points:
        column = min(max(int((point[0] - lo) / per), 0), columns - 1)
        if column != at and bucket:
            kept.extend(_ends(bucket))
            bucket = []
        at = column
        bucket.append(point)
    kept.extend(_ends(bucket))
    return kept


def _ends(bucket: list[tuple[float, float]]) -> list[tuple[float, float]]:
    low, high = min(bucket, key=lambda p: p[1]), max(bucket, key=lambda p: p[1])
    return [low] if low is high else sorted((low, high))


def robust_top(values: list[float]) -> float:
    """The y-axis top: the 98th percentile of the points, and never the single highest one when
    there are three or more, so one outlier (a server's line over a near-empty interval) cannot
    squash every other point to the floor; the points above are clipped at the top."""
    if len(values) < 3:
        return max(values)
    ranked = sorted(values)
    return min(ranked[int(0.98 * (len(ranked) - 1))], ranked[-2])


class LivePlots(Horizontal):
    DEFAULT_CSS = "LivePlots { height: 1fr; min-height: 6; } LivePlots PlotextPlot { width: 1fr; }"

    def __init__(self, span_s: float = SPAN_S, **kwargs) -> None:
        super().__init__(**kwargs)
        self.span_s = span_s
        self.tok_s: Series = deque(maxlen=MAX_POINTS)       # the rolling (5 s) rate
        self.tok_s_1s: Series = deque(maxlen=MAX_POINTS)
        self.accept: Series = deque(maxlen=MAX_POINTS)
        self.server_tok_s: Series = deque(maxlen=MAX_POINTS)
        self.server_accept: Series = deque(maxlen=MAX_POINTS)
        self.markers: deque[tuple[float, str]] = deque(maxlen=20)
        self.marked = 0  # markers so far: their numbers
        self.labels: list[Placed] = []  # where the last draw put the marker labels (tui.marker_labels)
        self.no_spec: tuple[float, str] | None = None        # (tok/s, where it comes from)
        self.approx = False
        self.window_s = 5.0   # the client's rolling window
        self.accept_source: str | None = None  # where the client's acceptance came from (the latest point's)
        self.source: str | None = None  # the load's prompt source (named in the legend or the title)
        self._dirty = True
        self.t0: float | None = None
        self.toks_plot = CachedPlot(id="plot-toks")      # held, not queried (see MainScreen)
        self.accept_plot = CachedPlot(id="plot-accept")

    def compose(self):
        yield self.toks_plot
        yield self.accept_plot

    def on_resize(self) -> None:
        self._dirty = True  # the titles are fitted to the width: the next tick redraws

    def on_mount(self) -> None:
        self.redraw()  # then the app's tick redraws us every 2 s at most (a plotext build costs tens of ms)

    def _rel(self, t: float) -> float:
        if self.t0 is None:
            self.t0 = t
        return t - self.t0

    def _add(self, series: Series, x: float, y: float) -> None:
        series.append((x, y))
        while series and series[0][0] < x - self.span_s:
            series.popleft()

    def add_load_point(self, t: float, tok_s: float, accept_len: float | None, tok_s_1s: float | None = None,
                       approx: bool = False, window_s: float = 5.0, accept_source: str | None = None) -> None:
        x = self._rel(t)
        if accept_len is not None and accept_source is not None:
            self.accept_source = accept_source
        self._add(self.tok_s, x, tok_s)
        if tok_s_1s is not None:
            self._add(self.tok_s_1s, x, tok_s_1s)
        if accept_len is not None:
            self._add(self.accept, x, accept_len)
        self.approx, self.window_s = approx, window_s
        self._dirty = True

    def add_server_point(self, t: float, gen_throughput: float, accept_len: float | None) -> None:
        x = self._rel(t)
        self._add(self.server_tok_s, x, gen_throughput)
        if accept_len is not None:  # the Decode batch line's accept len: the server's own, drawn like its tok/s
            self._add(self.server_accept, x, accept_len)
        self._dirty = True

    def mark(self, t: float, label: str) -> str:
        """A restart marker at ``t``; its numbered label (``#3 window 2048 -> 1024``), as the plot names it."""
        self.marked += 1
        numbered = f"#{self.marked} {label}"
        self.markers.append((self._rel(t), numbered))
        self._dirty = True
        return numbered

    def set_source(self, source: str) -> None:
        """The load's prompt source, named beside the client's lines."""
        from tui.widgets.ab_strip import source_label

        self.source = source_label(source)
        self._dirty = True

    def set_no_spec_baseline(self, tok_s: float, source: str) -> None:
        self.no_spec = (tok_s, source)
        self._dirty = True

    def redraw(self) -> None:
        if not self._dirty or not self.is_attached:  # detached (the app shutting down): nothing to draw
            return
        self._dirty = False
        # Axes that mean something: tok/s from 0, acceptance from 1.0 (no speculation) up, so a
        # drafter collapsing to 1.0 reads as a fall to the floor, not as one more wiggle.
        # Drawn in this order, so the client's 5 s line lies on top where it agrees with the server.
        toks = self.toks_plot
        legend = toks.size.height >= LEGEND_ROWS
        prompts = f" ({self.source})" if self.source else ""
        self._draw(toks, tok_s_title(toks.size.width, legend, self.approx, self.source),
                   [("server", self.server_tok_s, "gray"), ("client 1s", self.tok_s_1s, FAINT),
                    (f"client {self.window_s:g}s{prompts}", self.tok_s, "cyan")], floor=0.0,
                   reference=self.no_spec, legend=legend)
        source = SOURCE_LABEL.get(self.accept_source or "", "")
        client = f"client {self.window_s:g}s{prompts}" + (f": {source}" if source else "")
        named = f"accept length: client{f' ({source})' if source else ''} magenta, server log grey"
        fits = not legend and len(named) <= self.accept_plot.size.width - 2  # without a legend, if it fits
        self._draw(self.accept_plot, named if fits else accept_title(self.accept_plot.size.width, self.source),
                   [("server log", self.server_accept, "gray"), (client, self.accept, "magenta")],
                   floor=1.0, legend=legend)

    def _draw(self, widget: CachedPlot, title: str, series, floor: float = 0.0,
              reference: tuple[float, str] | None = None, legend: bool = True) -> None:
        plt = widget.plt
        plt.clear_figure()
        plt.title(title)
        last = max((s[-1][0] for _, s, _ in series if s), default=0.0)
        lo = max(0.0, last - self.span_s)
        drawn = False
        shown: list[float] = []
        dots = 2 * max(1, widget.size.width - 12)  # braille dots across the plotting area
        for label, points, color in series:
            pts = [(x, y) for x, y in points if x >= lo]
            if pts:
                drawn_pts = thin(pts, lo, last, dots)
                plt.plot([x for x, _ in drawn_pts], [y for _, y in drawn_pts], label=label if legend else None,
                         color=color, marker="braille")
                drawn = True
                shown += [y for _, y in pts]  # the axis from every point, as before thinning
        top = max(floor, robust_top(shown)) if shown else floor
        # plotext gives text the canvas colour of the moment, before the theme applies: name it
        canvas = Color.parse(self.app.theme_variables.get("surface", "black")).rgb
        if not drawn:
            plt.text("waiting for data", 0.5, 0.5, background=canvas, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            plt.xlabel("s")
            widget.changed()
            return
        if reference is not None:
            top = max(top, reference[0])
        ceiling = floor + (top - floor) * 1.3 if top > floor else floor + 1.0  # room for the legend and labels
        plt.ylim(floor, ceiling)
        columns = max(1, widget.size.width - 12)  # about the plotting area: less the y ticks and frame
        per_col = max(last - lo, 1e-9) / columns
        if reference is not None:
            plt.hline(reference[0], REFERENCE)
            plt.text(f"no-spec {reference[0]:.0f}", last, reference[0], color=REFERENCE, background=canvas,
                     alignment="right")
        bottom = floor + (ceiling - floor) * 0.02  # labels on the bottom row: the legend has the top
        shown_markers = [(x, label) for x, label in self.markers if x >= lo]
        for x, _ in shown_markers:
            plt.vline(x, MARKER)
        rows = max(1, min(3, (widget.size.height - 6) // 3))  # staggered rows at the bottom: the legend has the top
        row_h = (ceiling - floor) / max(widget.size.height - 5, 1)
        placed = place([(int((x - lo) / per_col), label) for x, label in shown_markers], columns, rows)
        for spot in placed:  # never overlapping (cut or numbered only where crowded); full text in the log
            plt.text(spot.text, lo + spot.col * per_col, bottom + spot.row * row_h, color=MARKER, background=canvas,
                     alignment="left")
        if widget is self.toks_plot:
            self.labels = placed
        plt.xlabel("s")
        widget.changed()

"""The server log tail: batched, bounded, filterable, with the lines that matter highlighted."""

from __future__ import annotations

import re
from collections import deque

from rich.highlighter import Highlighter
from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Log

FILTERS = ("all", "errors", "draft", "decode")
_MATCH = {
    "errors": re.compile(r"error|exception|traceback|failed|out of memory|died|fatal|sigquit", re.I),
    "draft": re.compile(r"dflash|ddtree|draft|speculative", re.I),
    "decode": re.compile(r"Decode batch|Prefill batch"),
}


class ServerLogHighlighter(Highlighter):
    """Colours the draft-window line, fatal lines and phase changes; everything else stays plain.

    Each rule is (gate, pattern, style): the regex runs only on lines that contain one of the gate's
    substrings, so the usual access and batch lines cost a few substring tests, not eight scans.
    """

    RULES = (
        (("draft_window_size=None",), re.compile(r"draft_window_size=None, compact_cache=False"), "bold black on red"),
        (("Initialized D",), re.compile(r"(Initialized DFLASH draft runner|Initialized DDTree worker)\..*"), "bold magenta"),
        (("compact_cache=True",), re.compile(r"draft_window_size=\d+, compact_cache=True"), "bold green"),
        (("Traceback", "rror", "out of memory", "died", "failed", "Not enough memory"),
         re.compile(r".*(Traceback|Error|error while|out of memory|died|failed|Not enough memory).*"), "bold red"),
        (("ready to roll",), re.compile(r"The server is fired up and ready to roll!"), "bold green"),
        (("Load weight", "graph", "KV Cache", "Started server process", "Uvicorn running"),
         re.compile(r"(Load weight (begin|end)|Capture .*(cuda|CUDA) graph (begin|end)|KV Cache is allocated|"
                    r"Started server process|Uvicorn running on).*"), "cyan"),
        (("accept len",), re.compile(r"accept len: [\d.]+"), "yellow"),
        (("[",), re.compile(r"^\[[^\]]+\]"), "grey50"),
    )

    def highlight(self, text: Text) -> None:
        plain = text.plain
        for gate, pattern, style in self.RULES:
            if any(word in plain for word in gate):
                for m in pattern.finditer(plain):
                    text.stylize(style, m.start(), m.end())


class LogPane(Log):
    """A `Log` whose lines arrive in batches. Keeps a bounded history so the filter can change."""

    def __init__(self, max_lines: int = 2000, **kwargs) -> None:
        super().__init__(max_lines=max_lines, highlight=True, auto_scroll=True, **kwargs)
        self.highlighter = ServerLogHighlighter()
        self._history: deque[str] = deque(maxlen=max_lines * 4)
        self.filter = "all"
        self.border_title = "log: all"
        self._follow = True

    def write_lines(self, lines, scroll_end: bool | None = None):  # type: ignore[override]
        """Log.write_lines without a screen re-layout per batch.

        Log sets ``virtual_size``, a layout reactive, on every write: under a busy server log that
        re-lays out and repaints the whole screen several times a second (the console's main cost in
        the busy benchmark). A scroll view only needs its scrollbars updated, so this sets the size
        without the layout and refreshes the log alone.
        """
        try:
            add = [part for line in lines for part in line.splitlines()]
            start = len(self._lines)
            self._lines.extend(add)
            if self.max_lines is not None and len(self._lines) > self.max_lines:
                self._prune_max_lines()
            self._update_size(self._updates, add)
            size = Size(self._width, len(self._lines))
            if size != self.virtual_size:
                self.set_reactive(Widget.virtual_size, size)
                self._scroll_update(size)
            self.refresh_lines(start, len(add))
            self.refresh()
        except AttributeError:  # Textual changed its internals: fall back to the public path
            return super().write_lines(lines, scroll_end)
        if scroll_end:
            # Same frame (one repaint) once laid out; before the first layout, after it.
            self.scroll_end(animate=False, immediate=self.size.height > 0, x_axis=False)
        return self

    def add_lines(self, lines: list[str]) -> None:
        self._history.extend(lines)
        shown = [line for line in lines if self._keep(line)]
        if shown:
            # Follow the tail unless the user scrolled up to read something.
            self._follow = self.scroll_y >= self.max_scroll_y - 1
            self.write_lines(shown, scroll_end=self._follow)

    def on_resize(self) -> None:
        if self._follow:  # stay at the tail when the pane changes size (layout, terminal resize)
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    def set_filter(self, name: str) -> None:
        if name not in FILTERS:
            raise ValueError(f"unknown log filter {name!r}")
        self.filter = name
        self.border_title = f"log: {name}"
        self.clear()
        kept = [line for line in self._history if self._keep(line)]
        self.write_lines(kept[-(self.max_lines or len(kept)):], scroll_end=False)
        self.scroll_end(animate=False, immediate=False, x_axis=False)

    def cycle_filter(self) -> str:
        self.set_filter(FILTERS[(FILTERS.index(self.filter) + 1) % len(FILTERS)])
        return self.filter

    def _keep(self, line: str) -> bool:
        return self.filter == "all" or bool(_MATCH[self.filter].search(line))

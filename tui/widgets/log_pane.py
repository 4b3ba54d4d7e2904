"""The server log tail: batched, bounded, filterable, with the lines that matter highlighted."""

from __future__ import annotations

import re
from collections import deque

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

FILTERS = ("all", "errors", "draft", "decode")
_MATCH = {
    "errors": re.compile(r"error|exception|traceback|failed|out of memory|died|fatal|sigquit", re.I),
    "draft": re.compile(r"dflash|ddtree|draft|speculative", re.I),
    "decode": re.compile(r"Decode batch|Prefill batch"),
}


class ServerLogHighlighter(Highlighter):
    """Colours the draft-window line, fatal lines and phase changes; everything else stays plain."""

    RULES = (
        (re.compile(r"draft_window_size=None, compact_cache=False"), "bold black on red"),
        (re.compile(r"(Initialized DFLASH draft runner|Initialized DDTree worker)\..*"), "bold magenta"),
        (re.compile(r"draft_window_size=\d+, compact_cache=True"), "bold green"),
        (re.compile(r".*(Traceback|Error|error while|out of memory|died|failed|Not enough memory).*"), "bold red"),
        (re.compile(r"The server is fired up and ready to roll!"), "bold green"),
        (re.compile(r"(Load weight (begin|end)|Capture .*(cuda|CUDA) graph (begin|end)|KV Cache is allocated|"
                    r"Started server process|Uvicorn running on).*"), "cyan"),
        (re.compile(r"accept len: [\d.]+"), "yellow"),
        (re.compile(r"^\[[^\]]+\]"), "grey50"),
    )

    def highlight(self, text: Text) -> None:
        plain = text.plain
        for pattern, style in self.RULES:
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

    def add_lines(self, lines: list[str]) -> None:
        self._history.extend(lines)
        shown = [line for line in lines if self._keep(line)]
        if shown:
            # Follow the tail unless the user scrolled up to read something.
            follow = self.scroll_y >= self.max_scroll_y - 1
            self.write_lines(shown, scroll_end=False)
            if follow:
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

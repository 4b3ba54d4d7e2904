"""The A/B strip under the plots: each configuration's figures since its marker, and the change.

Three lines when there is room: a header, the reference (the baseline pinned with ``b``, else the
configuration before) and the current configuration with its change against it, in columns; the
least important columns go first when they do not fit. At 80x24 one line, whose parts go in order
of priority (name, tok/s, the change in tok/s, acceptance, pass rate) as far as they fit. The
figures come computed (workloads/live/ab.py); this only lays them out. An acceptance that is not
the requests' own says where it came from: ``5.60 (counters)``, ``5.60 (log)``. The load's prompt
source is named over the tags (one line: among the parts, before the request count): acceptance is a
property of the prompts, so a figure always says on which it was measured.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from workloads.live import Comparison, ConfigFigures

SEP = " │ "
TREND_STYLE = {1: "bold green", -1: "bold red", 0: ""}  # a change within noise: no colour claims a winner


def _parts(f: ConfigFigures, name: str) -> list[tuple[float, Text]]:
    """(priority, text) for one configuration's one-line form; lower numbers matter more."""
    approx = " (approx)" if f.approx else ""
    passed = f"{f.passed}/{f.graded} pass" if f.graded else "- pass"
    return [(0, Text(name or f"#{f.number} {f.name}", style="bold")),
            (1, Text(f"{f.tok_text()} tok/s{approx}")),
            (3, Text(f"accept {f.accept_text()}")),
            (5, Text(f"{f.requests} req")),
            (4, Text(passed))]


def _fit(parts: list[tuple[float, Text]], width: int) -> Text:
    """Join the parts in order, leaving out the least important ones until the line fits."""
    kept = list(parts)
    while len(kept) > 1 and sum(len(t) for _, t in kept) + len(SEP) * (len(kept) - 1) > width:
        kept.remove(max(kept, key=lambda p: p[0]))
    return Text(SEP).join(t for _, t in kept)


# The wide form's columns, under a header row: (priority, header); lower priorities stay longest.
COLUMNS = ((0, ""), (0, "config"), (1, "tok/s"), (2, "change"), (3, "accept"), (4, "change"),
           (5, "pass"), (6, "req"))
GAP = 2


def _row(tag: str, f: ConfigFigures, name: str, tok: Text, acc: Text) -> list[Text]:
    approx = " approx" if f.approx else ""
    return [Text(tag, style="dim"), Text(name or f"#{f.number} {f.name}", style="bold"),
            Text(f"{f.tok_text()}{approx}"), tok, Text(f.accept_text()), acc,
            Text(f"{f.passed}/{f.graded}" if f.graded else "-"), Text(str(f.requests))]


def source_label(source: str) -> str:
    """A prompt source as the strip and the plots name it: a file by its name, cut to 24 characters."""
    name = source.rstrip("/").rsplit("/", 1)[-1] or source
    return name if len(name) <= 24 else name[:23] + "…"


def _grid(rows: list[list[Text]], width: int, source: str | None = None) -> list[Text]:
    """A dim header row (the prompt source over the tags) and the rows in aligned columns, leaving
    out the least important columns until they fit."""
    rows = [[Text(source or h, style="dim") if i == 0 else Text(h, style="dim") for i, (_, h) in enumerate(COLUMNS)],
            *rows]
    keep = list(range(len(COLUMNS)))
    widths = [max(len(r[i]) for r in rows) for i in keep]
    while len(keep) > 2 and sum(widths[i] for i in keep) + GAP * (len(keep) - 1) > width:
        keep.remove(max(keep, key=lambda i: (COLUMNS[i][0], i)))
    out = []
    for row in rows:
        line = Text()
        for n, i in enumerate(keep):
            cell = row[i].copy()
            if n < len(keep) - 1:
                cell.pad_right(widths[i] - len(cell) + GAP)
            line.append_text(cell)
        out.append(line)
    return out


class ABStrip(Widget):
    DEFAULT_CSS = "ABStrip { height: 3; padding: 0 1; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.comparison: Comparison | None = None
        self.source: str | None = None  # the load's prompt source, named in the strip

    def show(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self.refresh()

    def set_source(self, source: str) -> None:
        self.source = source_label(source)
        self.refresh()

    def lines(self, width: int, height: int) -> list[Text]:
        c = self.comparison
        on = f" on {self.source}" if self.source else ""
        if c is None or not (c.current.windows or c.current.requests or c.reference):
            hint = f"A/B per configuration{on}: starts with the load (l); b pins a baseline"
            return [Text(hint, style="dim")]
        # one line: the source after the change in tok/s, before acceptance, cut shorter
        short = self.source if not self.source or len(self.source) <= 16 else self.source[:15] + "…"
        source = [(2.5, Text(short, style="dim"))] if short else []
        now, ref = c.current, c.reference
        if ref is None:
            tail = ("the baseline (b): later configurations are compared with it" if c.pinned
                    else "the next Apply shows the change; b pins this as the baseline")
            if height <= 1:
                return [_fit([*_parts(now, now.name), *source, (6, Text(tail, style="dim"))], width)]
            tag = "baseline" if c.pinned else "now"
            return [*_grid([_row(tag, now, now.name, Text(), Text())], width, self.source)[:height - 1],
                    Text(tail, style="dim")]
        now_name, ref_name = c.names()
        tag = "baseline" if c.pinned else "before"
        tok_change, acc_change = c.tok_change, c.accept_change
        if height <= 1:
            tok = Text(f"{tok_change.text} tok/s vs {ref_name or tag}", style=TREND_STYLE[tok_change.trend])
            current = _parts(now, now_name)
            return [_fit([*current[:2], (2, tok), *current[2:], *source], width)]
        tok = Text(tok_change.text, style=TREND_STYLE[tok_change.trend])
        acc = Text(acc_change.text, style=TREND_STYLE[acc_change.trend])
        return _grid([_row(tag, ref, ref_name, Text(), Text()), _row("now", now, now_name, tok, acc)], width,
                     self.source)

    def render(self) -> Text:
        return Text("\n").join(self.lines(self.size.width, self.size.height))

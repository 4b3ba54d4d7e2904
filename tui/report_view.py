"""``ddtune report``'s Markdown as the console shows it (a run opened from the results screen): its
pipe tables as tables that fit the screen, its headings and ``**bold**`` in bold, the rest as
wrapped text. The report holds run data (labels, model names, reasons), so every piece reaches the
screen as ``rich.text.Text`` (tui.literal): nothing in it is read as markup."""

from __future__ import annotations

import re

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

_RULE = re.compile(r"^:?-{3,}:?$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_NUMBER = re.compile(r"^[-+x]?\d")


def _inline(line: str) -> Text:
    """One line of text: ``**...**`` bold (the stars dropped), the rest as it is."""
    out, at = Text(), 0
    for found in _BOLD.finditer(line):
        out.append(line[at:found.start()])
        out.append(found.group(1), style="bold")
        at = found.end()
    out.append(line[at:])
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(rows: list[list[str]]) -> Table:
    """A pipe table (its first row the head, its |---| row dropped) as a Rich table."""
    head, body = rows[0], [r for r in rows[1:] if not all(_RULE.match(c) for c in r)]
    numeric = [bool(body) and all(_NUMBER.match(r[i]) or r[i] in ("", "-", "ref")
                                  for r in body if i < len(r)) for i in range(len(head))]
    table = Table(box=box.SIMPLE_HEAD, show_header=any(head), pad_edge=False, expand=False)
    for name, right in zip(head, numeric, strict=True):
        table.add_column(Text(name, style="bold"), justify="right" if right else "left", overflow="fold")
    for row in body:
        table.add_row(*(_inline(c) for c in (row + [""] * len(head))[:len(head)]))
    return table


def report_view(markdown: str) -> RenderableType:
    """The report as renderables: headings, tables, and wrapped paragraphs, in order."""
    parts: list[RenderableType] = []
    rows: list[list[str]] = []
    for line in markdown.splitlines():
        if line.startswith("|") and line.rstrip().endswith("|"):
            rows.append(_cells(line))
            continue
        if rows:
            parts.append(_table(rows))
            rows = []
        heading = re.match(r"^(#{1,6}) (.*)$", line)
        if heading:
            parts.append(Text(heading.group(2), style="bold underline" if len(heading.group(1)) == 1 else "bold"))
        else:
            parts.append(_inline(line))
    if rows:
        parts.append(_table(rows))
    return Group(*parts)

"""Tiny text renderers (bars, sparklines, durations) shared by the panels. Pure functions."""

from __future__ import annotations

from rich.text import Text

_SPARK = " ▁▂▃▄▅▆▇█"


def bar(fraction: float, width: int, style: str = "green", empty_style: str = "grey35") -> Text:
    fraction = min(max(fraction, 0.0), 1.0)
    full = round(fraction * width)
    return Text.assemble(("█" * full, style), ("░" * (width - full), empty_style))


def stacked_bar(parts: list[tuple[float, str]], width: int, empty_style: str = "grey35") -> Text:
    """A bar of several coloured shares of one whole (fractions that add up to at most 1)."""
    text = Text()
    used = 0
    for fraction, style in parts:
        cells = min(round(max(fraction, 0.0) * width), width - used)
        text.append("█" * cells, style)
        used += cells
    text.append("░" * (width - used), empty_style)
    return text


def sparkline(values: tuple[int, ...] | list[float], width: int, top: float = 100.0) -> str:
    values = list(values)[-width:]
    if not values:
        return " " * width
    cells = [_SPARK[min(8, max(0, round(v / top * 8)))] if top else " " for v in values]
    return " " * (width - len(cells)) + "".join(cells)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"

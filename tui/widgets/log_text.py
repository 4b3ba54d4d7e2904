"""The log pane's text rules, apart from its widget: which kinds each filter shows, how a line is
drawn (bounded, tabs expanded, control characters visible), and the search's smart case."""

from __future__ import annotations

import re

FILTERS = ("all", "errors", "draft", "decode")
FILTER_KINDS: dict[str, frozenset[str] | None] = {
    "all": None,
    "errors": frozenset({"fatal", "error", "warning", "ddtune"}),
    "draft": frozenset({"draft", "ddtune"}),
    "decode": frozenset({"decode", "ddtune"}),
}
MAX_SHOWN = 2000  # characters of one line that are drawn; the rest is cut with "…"
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def display_text(text: str) -> str:
    """The text as drawn: bounded, tabs expanded, control characters shown as U+FFFD."""
    if len(text) > MAX_SHOWN:
        text = text[:MAX_SHOWN] + "…"
    if "\t" in text:
        text = text.expandtabs()
    if not text.isprintable():
        text = _CONTROL.sub("\ufffd", text)
    return text


def search_pattern(query: str) -> re.Pattern[str] | None:
    """Smart case: a query in lower case matches any case; one with a capital matches exactly."""
    if not query:
        return None
    return re.compile(re.escape(query), 0 if query != query.lower() else re.IGNORECASE)

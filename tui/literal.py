"""Server and model text is shown as text: the console never parses it as markup or actions.

Textual parses a plain ``str`` as content markup in ``Static``/``Label`` (and their ``update``),
in ``DataTable`` cells, in Rich ``Table`` cells and in notifications, so ``[@click=app.quit]`` in a
model name or an error would be a live action there and ``[bold red]`` would style. The rule here:

- data reaches widgets as ``rich.text.Text`` (:func:`literal`; :func:`cell` in a ``DataTable``),
  never as a markup string;
- ``DdtuneApp.notify`` is plain for the whole console (every notification carries data);
- a markup string the console builds for its own styling escapes what it embeds (``rich.markup.escape``).

Control characters are gone before any of this: ``backends.core.plaintext`` made the text plain where it
entered ddtune.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text


def literal(value: object, style: str = "") -> Text:
    """``value`` as text shown as it is (a ``Text`` stays as it was)."""
    return value if isinstance(value, Text) else Text(str(value), style)


def cell(value: object) -> Text:
    """``value`` for a one-row ``DataTable`` cell: as Textual's own formatter would show a str
    (cut at the column, not wrapped), without reading it as markup (a ``Text`` stays as it was)."""
    return value if isinstance(value, Text) else Text(str(value), no_wrap=True, end="")


def cell_width(text: str) -> int:
    """How many terminal cells ``text`` takes (one per character for ASCII, without asking Rich)."""
    return len(text) if text.isascii() else cell_len(text)

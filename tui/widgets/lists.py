"""Lists that j and k move in, as in nvitop, k9s and less: down and up, beside the arrows.

Bound on the list itself, so they apply only while it has focus; elsewhere k is still Knobs."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable, SelectionList

VIM_KEYS: list[Binding | tuple[str, str] | tuple[str, str, str]] = [
    Binding("j", "cursor_down", "Down", show=False, id="list.down"),
    Binding("k", "cursor_up", "Up", show=False, id="list.up")]


class ListTable(DataTable):
    """A DataTable with j/k (with no cursor, they scroll)."""

    BINDINGS = VIM_KEYS


class ListSelection(SelectionList):
    """A SelectionList with j/k."""

    BINDINGS = VIM_KEYS

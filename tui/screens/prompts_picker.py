"""The live load's prompt source: a built-in set, or a file (or ``hf:NAME``) typed in.

Dismisses with the source chosen, or None. A typed source is read before the picker closes (in a
thread: a large file takes a moment), so a missing file or one without a readable prompt is said
here, on one line, and the load keeps what it had.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from tui.literal import literal


class PromptsPicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompts.cancel")]
    DEFAULT_CSS = """
    PromptsPicker { align: center middle; }
    PromptsPicker > Vertical { width: 76; max-width: 100%; height: auto; border: thick $accent; padding: 0 1;
                               background: $surface; }
    PromptsPicker OptionList { height: auto; max-height: 6; }
    PromptsPicker #prompts-error { color: $error; height: auto; }
    """

    def __init__(self, current: str, builtins: dict[str, str], check: Callable[[str], str | None]) -> None:
        super().__init__()
        self.current = current
        self.builtins = builtins
        self.check = check  # the source's problem in one line, or None when it can be read

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(literal(f"Prompts for the live load (now: {self.current})"))
            yield OptionList(*(Option(f"{name:<10} {text}", id=name) for name, text in self.builtins.items()),
                             id="prompts-builtins")
            yield Label("or a JSON/JSONL file, or hf:NAME[:SPLIT] (Enter reads it):")
            yield Input(placeholder="~/prompts.jsonl", id="prompts-path")
            yield Static("", id="prompts-error")
            yield Label("enter: use it · esc: keep the current one", classes="dim")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = list(self.builtins).index(self.current) if self.current in self.builtins else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        source = event.value.strip()
        if not source:
            return
        error = self.query_one("#prompts-error", Static)
        error.update("reading it…")
        problem = await asyncio.to_thread(self.check, source)
        if problem is not None:
            error.update(literal(problem))
            return
        self.dismiss(source)

    def action_cancel(self) -> None:
        self.dismiss(None)

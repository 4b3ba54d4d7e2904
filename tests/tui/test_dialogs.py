"""Issue 32: the console's dialogs show their whole text and their keys at every width: the `a`
dialog read "...The server reloads t" at 200 columns, and every button's key hint ("[y]") was
taken for markup and dropped."""

from __future__ import annotations

import html
import re

import pytest
from rich.text import Text

from tui.app import DdtuneApp
from tui.screens.quit_dialog import ConfirmApply, ConfirmReplace, ConfirmStop, QuitDialog


def screen_text(app) -> str:
    """The screen as plain text, one string per row (as the SVG export draws it)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def words(text: str) -> list[str]:
    return Text.from_markup(text).plain.split()


@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
@pytest.mark.parametrize("make", [
    lambda: ConfirmApply("window 2048 -> 1024, budget 8 -> 16"),
    lambda: ConfirmStop(),
    lambda: QuitDialog(),
    lambda: QuitDialog(running=False),
    lambda: ConfirmReplace(4242, "ready", "/srv/configs/qwen3-8b-dflash.toml", "/srv/configs/other.toml"),
], ids=["apply", "stop", "quit", "quit-stopped", "replace"])
async def test_every_dialog_shows_all_its_text_and_keys(size, make):
    from textual.widgets import Button, Label

    app = DdtuneApp()
    async with app.run_test(size=size) as pilot:
        dialog = make()
        app.push_screen(dialog)
        await pilot.pause()
        shown = " ".join(screen_text(app).split())
        for label in dialog.query(Label):
            text = str(label.render())
            for word in text.split():
                assert word in shown, (word, text)
        for button in dialog.query(Button):
            label = str(button.label)
            assert re.search(r"\[(\w|esc|ctrl\+\w)+\]$", label), label  # its key, shown
            assert label in shown, label

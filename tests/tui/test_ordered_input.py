"""Keys that arrive in one burst act in the order typed in the knob editor (issue 12, item 8).

The driver posts each key to the App without waiting for the previous one to be handled; posting
them here the same way reproduces a burst (``\\x7f3`` in one read) without a terminal. Pilot's
``press`` waits between keys, so it would hide the bug. The tmux test in tests/e2e sends the real
bytes to the real console.
"""

from __future__ import annotations

import pytest
from textual import events
from textual.app import App
from textual.widgets import Input

from tui.screens.knob_editor import KnobEditor
from tui.widgets.ordered_input import OrderedInput

BURST = [("backspace", "\x7f"), ("3", "3"), ("left", None), ("backspace", "\x7f"), ("9", "9"),
         ("end", None), ("ctrl+u", "\x15"), ("7", "7")]


class OneInput(App):
    def __init__(self, cls: type[Input]) -> None:
        super().__init__()
        self.cls = cls

    def compose(self):
        yield self.cls("12", id="field")


async def burst_into(app: App, pilot, keys) -> None:
    for key, character in keys:
        app.post_message(events.Key(key, character))  # as the driver does: no wait in between
    await pilot.pause()
    await pilot.pause()


@pytest.mark.parametrize("keys, expected", [
    (BURST[:2], "13"),                       # backspace then a digit, one read: both act
    (BURST[:5], "93"),                       # 13 -> cursor left of 3 -> delete 1 -> type 9
    (BURST, "7"),                            # ctrl+u clears what is left of the cursor, then 7
])
async def test_ordered_input_keeps_the_order_of_a_burst(keys, expected):
    app = OneInput(OrderedInput)
    async with app.run_test() as pilot:
        field = app.query_one("#field", Input)
        field.focus()
        field.cursor_position = len(field.value)
        await pilot.pause()
        await burst_into(app, pilot, keys)
        assert field.value == expected


async def test_plain_textual_input_drops_the_burst():
    """The upstream bug this works around (Textualize/textual#6605). When this starts failing,
    Textual fixed it: OrderedInput can go (docs/upstream/textual-burst-keys.md)."""
    app = OneInput(Input)
    async with app.run_test() as pilot:
        field = app.query_one("#field", Input)
        field.focus()
        field.cursor_position = len(field.value)
        await pilot.pause()
        await burst_into(app, pilot, BURST[:2])
        assert field.value == "12"  # the 3 went in first and the late backspace took it out


async def test_keys_bound_above_the_input_still_reach_the_editor():
    """escape and ctrl+s belong to the editor screen: OrderedInput must let them bubble."""
    results = []

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(KnobEditor({"window": "2048"}, {}, lambda values: {}), results.append)

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        editor = app.screen
        field = editor.query_one("#knob-window", Input)
        assert isinstance(field, OrderedInput) and field.has_focus
        await burst_into(app, pilot, [("backspace", "\x7f"), ("end", None), ("backspace", "\x7f"),
                                      ("1", "1"), ("ctrl+s", None)])
        assert results == [{"window": "1"}]  # focus selected 2048: the first backspace took it all


async def test_a_burst_with_tabs_types_into_the_field_focus_moved_to():
    """`tab tab 1000` in one read (the tmux test saw `none1000` land in budget): the App forwards
    all six keys to budget before the first tab is handled, so the digits must follow the focus."""
    results = []

    class Host(App):
        def on_mount(self) -> None:
            values = {"budget": "8", "topk": "4", "window": "2048"}
            self.push_screen(KnobEditor(values, {}, lambda values: {}), results.append)

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        editor = app.screen
        budget = editor.query_one("#knob-budget", Input)
        budget.focus()
        await pilot.pause()
        await burst_into(app, pilot, [("tab", "\t"), ("tab", "\t"), ("1", "1"), ("0", "0"),
                                      ("0", "0"), ("0", "0")])
        for _ in range(5):
            await pilot.pause()
        assert budget.value == "8"
        assert editor.query_one("#knob-topk", Input).value == "4"
        window = editor.query_one("#knob-window", Input)
        assert window.has_focus and window.value == "1000"  # focus selected 2048; 1000 replaced it

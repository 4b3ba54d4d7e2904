"""At 80x24 every screen shows its keys and its errors (issue 22, item 9): the footer's Help and Quit
are inside the 80 columns on the main screen, the results list, the sweep form and the search form
(where an input takes ? and q as text, the F1 and ctrl+q of the same actions); the knob editor's
hints and the sweep form's refusal are whole on screen, not cut at the edge."""

from __future__ import annotations

from textual.widgets import Static
from textual.widgets._footer import FooterKey

from backends.knobs.config import config_from_dict
from tests.tui.fixtures import laid_out
from tui.app import DdtuneApp


def shown_keys(app) -> dict[str, str]:
    """The footer keys whose whole label lies inside the screen: description -> key."""
    width = app.size.width
    return {key.description: key.key for key in app.screen.query(FooterKey)
            if key.region.width and key.region.right <= width}


async def keys_once_laid_out(pilot, app, expected: dict[str, str]) -> dict[str, str]:
    """The footer keys once they include ``expected``, or as they are after 10 s: a pushed screen's
    footer is composed and laid out some frames later (one pause was not enough on a loaded machine)."""
    await laid_out(pilot, lambda: all(shown_keys(app).get(name) == key for name, key in expected.items()))
    return shown_keys(app)


async def test_help_and_quit_fit_on_every_screen_at_80x24(state_dir):
    from tests.tui.fixtures import idle_console
    from tui.screens.results import ResultsScreen
    from tui.screens.search import SearchScreen
    from tui.screens.sweep import SweepScreen

    app = DdtuneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        keys = await keys_once_laid_out(pilot, app, {"Help": "question_mark", "Quit": "q"})
        assert keys.get("Help") == "question_mark" and keys.get("Quit") == "q", keys
        assert {"Knobs", "Load", "Results", "Sweep"} <= set(keys), keys
        for screen in (ResultsScreen(), SweepScreen(idle_console(), ["b4-t4-w2048", "b8-t4-w2048"])):
            await app.push_screen(screen)
            keys = await keys_once_laid_out(pilot, app, {"Back": "escape", "Help": "question_mark", "Quit": "q"})
            assert keys.get("Back") == "escape" and keys.get("Help") == "question_mark" \
                and keys.get("Quit") == "q", (screen, keys)
            app.pop_screen()
            await pilot.pause()
        await app.push_screen(SearchScreen(idle_console(), "budget=4,8"))  # its space field has focus: ? and q: text
        expected = {"Back": "escape", "Help": "f1", "Quit": "ctrl+q", "palette": "ctrl+p"}
        assert await keys_once_laid_out(pilot, app, expected) == expected
        await pilot.press("f1")
        assert type(app.screen).__name__ == "HelpScreen"


async def test_knob_editor_hints_and_sweep_refusal_are_whole_at_80x24():
    from tests.tui.fixtures import idle_console
    from backends.knobs import check_knob_texts, knob_form
    from tui.screens.knob_editor import KnobEditor
    from tui.screens.sweep import SweepScreen

    config = config_from_dict({}, "defaults")
    current = knob_form(config).values
    app = DdtuneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        editor = KnobEditor(current, {}, lambda values: check_knob_texts(values, config).problems)
        await app.push_screen(editor)
        editor.query_one("#knob-window").value = "-5"
        note = editor.query_one("#note-window", Static)
        hint = check_knob_texts(editor.values(), config).problems["window"]
        await laid_out(pilot, lambda: note.region.height * note.region.width >= len(hint))
        assert len(hint) > note.region.width  # too long for one line at 80 columns: it must wrap
        assert note.region.height * note.region.width >= len(hint), (note.region, hint)
        assert "[esc]" in str(editor.query_one("#cancel").label)  # the key is shown, not eaten as markup
        editor.dismiss(None)
        await pilot.pause()

        sweep = SweepScreen(idle_console(), ["b4-t4-w2048"])
        await app.push_screen(sweep)
        sweep.query_one("#gpus").value = "0,x"
        sweep.query_one("#start").press()
        status = sweep.query_one("#status", Static)
        await laid_out(pilot, lambda: "'x' is not a GPU index" in str(status.render()) and status.region.right <= 80)
        assert "'x' is not a GPU index" in str(status.render()) and status.region.right <= 80

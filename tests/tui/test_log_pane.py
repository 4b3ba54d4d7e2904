"""The log pane under Pilot: batches, the bound, filters by kind, follow versus scrolled up, sideways
scrolling, `/` search with n/N on the real main screen, and the colours of the lines that matter."""

from __future__ import annotations

from rich.color import Color
from textual import events
from textual.app import App

from backends.logs.kind import read_lines
from tests.tui.fixtures import LOG
from tui import messages as m
from tui.app import DdtuneApp
from tui.widgets.log_pane import LogPane
from tui.widgets.log_search import LogSearch

T = "[2026-11-30 09:00:08]"
WINDOW_OFF = (f"{T} Initialized DFLASH draft runner. attention_backend=fa3, model=DFlashDraftModel, "
              "block_size=16, draft_window_size=None, compact_cache=False")
WINDOW_ON = (f"{T} Initialized DFLASH draft runner. attention_backend=fa3, model=DFlashDraftModel, "
             "block_size=16, draft_window_size=1024, compact_cache=True")
DECODE = (f"{T} Decode batch, #running-req: 1, #token: 90, token usage: 0.01, accept len: 6.12, "
          "accept rate: 0.38, cuda graph: True, gen throughput (token/s): 210.55, #queue-req: 0")
FATAL = f"{T} Scheduler hit an exception: Traceback (most recent call last):"
WARNING = f"{T} WARNING: the draft model's vocab differs from the target's"
ACCESS = f'{T} INFO:     127.0.0.1:43514 - "GET /health HTTP/1.1" 200 OK'


class CountingPane(LogPane):
    """Counts repaint requests, to show that a batch costs the same however many lines it has."""

    refreshes = 0

    def refresh(self, *regions, **kwargs):
        self.refreshes += 1
        return super().refresh(*regions, **kwargs)


class LogApp(App):
    def __init__(self, max_lines: int = 50) -> None:
        super().__init__()
        self.max_lines = max_lines

    def compose(self):
        yield CountingPane(max_lines=self.max_lines, id="log")


def numbered(n: int, start: int = 0, width: int = 0) -> list:
    return read_lines([f"{T} line {i:04d}" + (" " + "x" * width if width else "") for i in range(start, start + n)])


def segment_at(pane: LogPane, row: int, needle: str):
    """The first drawn segment of ``row`` that holds ``needle`` (row is an index into ``pane.lines``)."""
    strip = pane.render_line(row - round(pane.scroll_y))
    for segment in strip:
        if needle in segment.text:
            return segment
    raise AssertionError(f"{needle!r} not drawn in row {row}: {strip.text!r}")


def reddish(color: Color) -> bool:
    r, g, b = color.get_truecolor()
    return r - max(g, b) >= 50


def greenish(color: Color) -> bool:
    r, g, b = color.get_truecolor()
    return g > r and g > b


async def test_a_batch_is_one_update_and_the_pane_is_bounded():
    app = LogApp(max_lines=50)
    async with app.run_test(size=(80, 12)) as pilot:
        pane = app.query_one(CountingPane)
        pane.append(numbered(60))
        await pilot.pause()
        pane.refreshes = 0
        pane.append(numbered(1, start=60))
        one = pane.refreshes
        pane.refreshes = 0
        pane.append(numbered(441, start=61))
        assert pane.refreshes == one <= 2  # 441 lines cost what one line costs
        await pilot.pause()
        assert pane.line_count == 50  # bounded
        assert pane.lines[0] == f"{T} line 0452" and pane.lines[-1] == f"{T} line 0501"
        assert pane.scroll_y == pane.max_scroll_y > 0  # at the tail
        pane.set_filter("decode")
        pane.set_filter("all")  # a rebuilt view holds only what the bound kept
        assert pane.line_count == 50


async def test_follow_only_at_the_bottom_and_scrolled_up_stays_put():
    app = LogApp(max_lines=50)
    async with app.run_test(size=(80, 12)) as pilot:
        pane = app.query_one(LogPane)
        pane.append(numbered(30))
        await pilot.pause()
        assert pane.follow and pane.scroll_y == pane.max_scroll_y
        pane.focus()
        await pilot.press("pageup")
        await pilot.pause()
        assert not pane.follow
        top = round(pane.scroll_y)
        first_shown = pane.lines[top]
        pane.append(numbered(10, start=30))  # not full yet: nothing moves
        await pilot.pause()
        assert round(pane.scroll_y) == top and pane.lines[top] == first_shown
        pane.append(numbered(15, start=40))  # full: 5 lines fall off the top, the view moves with its lines
        await pilot.pause()
        assert pane.lines[round(pane.scroll_y)] == first_shown
        assert "new below" in str(pane.border_subtitle)
        await pilot.press("end")
        await pilot.pause()
        assert pane.follow and "new below" not in str(pane.border_subtitle)
        pane.append(numbered(3, start=55))
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y and pane.lines[-1] == f"{T} line 0057"
        await pilot.resize_terminal(80, 8)  # a smaller pane keeps following the tail
        await pilot.pause()
        pane.append(numbered(2, start=58))
        await pilot.pause()
        assert pane.follow and pane.scroll_y == pane.max_scroll_y


async def test_filters_by_kind_and_notes_show_in_every_filter():
    app = LogApp()
    async with app.run_test(size=(100, 12)) as pilot:
        pane = app.query_one(LogPane)
        pane.append(read_lines([DECODE, ACCESS, WINDOW_OFF, FATAL, WARNING]))
        pane.note("--- ddtune: restarting sim server on port 30000 ---")
        pane.set_filter("decode")
        await pilot.pause()
        assert pane.lines == (DECODE, "--- ddtune: restarting sim server on port 30000 ---")
        assert pane.border_title == "log: decode"
        assert pane.cycle_filter() == "all"
        assert pane.line_count == 6
        pane.set_filter("errors")
        assert pane.lines[:2] == (FATAL, WARNING)
        pane.set_filter("draft")
        assert pane.lines[0] == WINDOW_OFF
        pane.append(read_lines([ACCESS, WINDOW_ON]))  # new lines pass the same filter
        assert pane.lines[-1] == WINDOW_ON and ACCESS not in pane.lines


async def test_long_lines_scroll_sideways():
    app = LogApp()
    async with app.run_test(size=(60, 10)) as pilot:
        pane = app.query_one(LogPane)
        pane.append(numbered(3, width=300))
        await pilot.pause()
        assert pane.virtual_size.width > 300 and pane.max_scroll_x > 0
        pane.focus()
        before = pane.render_line(0).text
        for _ in range(5):
            await pilot.press("right")
        await pilot.pause()
        assert pane.scroll_x > 0
        assert pane.render_line(0).text != before  # the row shows columns further right
        assert "col" in str(pane.border_subtitle)
        pane.append(numbered(1, start=3))  # following the tail does not reset the sideways scroll
        await pilot.pause()
        assert pane.scroll_x > 0


async def test_draft_window_line_stands_out():
    app = LogApp()
    async with app.run_test(size=(200, 12)) as pilot:
        pane = app.query_one(LogPane)
        pane.append(read_lines([WINDOW_OFF, WINDOW_ON, DECODE]))
        await pilot.pause()
        off = segment_at(pane, 0, "draft_window_size=None, compact_cache=False")
        assert off.style.bgcolor is not None and reddish(off.style.bgcolor)
        assert off.style.bold
        start = segment_at(pane, 0, "Initialized DFLASH")  # the whole line is red too, visible at any width
        assert reddish(start.style.color)
        on = segment_at(pane, 1, "draft_window_size=1024, compact_cache=True")
        assert greenish(on.style.color) and on.style.bold
        accept = segment_at(pane, 2, "accept len: 6.12")
        assert accept.style.color != segment_at(pane, 2, "Decode batch").style.color


async def test_search_on_the_main_screen_n_and_N():
    app = DdtuneApp()  # no controller: the real main screen fed by messages
    async with app.run_test(size=(120, 40)) as pilot:
        texts = [f"{T} filler {i}" if i % 10 else f"{T} needle {i}" for i in range(60)]
        app.main.post_message(m.LogLinesRead(read_lines(texts)))
        await pilot.pause()
        pane = app.main.query_one("#log", LogPane)
        search = app.main.query_one(LogSearch)
        assert not search.display
        await pilot.press("slash")
        assert search.display and search.has_focus
        await pilot.press(*"needle")
        assert pane.search_query == "needle" and pane.current_match is None  # typing lights, Enter moves
        await pilot.press("enter")
        first = pane.current_match
        assert first is not None and pane.lines[first].startswith(f"{T} needle")
        lit = segment_at(pane, first, "needle")
        assert lit.text == "needle" and lit.style.bgcolor is not None
        assert "lines" in str(pane.border_subtitle)
        await pilot.press("escape")
        assert not search.display and pane.has_focus
        await pilot.press("n")
        assert pane.current_match == (first + 10) % 60
        await pilot.press("N", "N")
        assert pane.current_match == (first - 10) % 60
        row = pane.current_match
        assert pane.scroll_y <= row < pane.scroll_y + pane.scrollable_content_region.height  # scrolled to it
        plain = segment_at(pane, row + 1, "filler")
        assert plain.style.bgcolor == pane.rich_style.bgcolor  # a line without the word is not lit
        await pilot.press("slash")
        await pilot.press("ctrl+u", "enter")  # an empty search clears the lights
        assert pane.search_query == "" and pane.current_match is None


async def test_search_wraps_is_smart_case_and_reveals_columns():
    app = LogApp()
    async with app.run_test(size=(60, 10)) as pilot:
        pane = app.query_one(LogPane)
        pane.append(read_lines([f"{T} " + "x" * 200 + " Target here", f"{T} target there", f"{T} nothing"]))
        await pilot.pause()
        assert pane.search("Target")  # a capital: case-sensitive, only the first line
        assert pane.current_match == 0 and pane.scroll_x > 100  # scrolled sideways to the match
        assert pane.next_match() and pane.current_match == 0  # wraps to itself
        assert pane.search("target")  # lower case matches both
        assert pane.next_match() and pane.previous_match()
        assert not pane.search("absent") and pane.current_match is None
        assert "no match" in str(pane.border_subtitle)


async def test_snapshot_fixture_lines_keep_their_kinds():
    """The console's LogLinesRead carries LogLines made by read_lines: the pane shows them as given."""
    app = DdtuneApp()
    async with app.run_test(size=(160, 50)) as pilot:
        app.main.post_message(m.LogLinesRead(read_lines(LOG)))
        await pilot.pause()
        pane = app.main.query_one("#log", LogPane)
        assert pane.lines == tuple(LOG)
        pane.set_filter("draft")
        assert pane.lines == (LOG[2],)


async def test_end_reaches_the_tail_while_lines_keep_coming():
    """End under a burst: an animated scroll would be stopped by each batch and never arrive."""
    app = LogApp(max_lines=50)
    async with app.run_test(size=(80, 12)) as pilot:
        pane = app.query_one(LogPane)
        pane.append(numbered(50))
        await pilot.pause()
        pane.focus()
        pane.scroll_to(y=0, animate=False)
        await pilot.pause()
        assert not pane.follow
        app.post_message(events.Key("end", None))  # as the terminal sends it; no waiting on animations
        for batch in range(5):
            await pilot.pause(0.05)
            pane.append(numbered(10, start=50 + 10 * batch))
        await pilot.pause()
        assert pane.follow and pane.scroll_y == pane.max_scroll_y
        assert pane.lines[-1] == f"{T} line 0099"


async def test_the_main_screen_scrolls_the_log_at_most_once_a_tick(monkeypatch):
    """Batches every 0.25 s would scroll (repaint) the whole pane four times a second: the main
    screen shows a quiet log's first line at once and holds the rest for its tick or a phase change."""
    from tui.screens import main as main_screen
    from tui.views import ServerView

    monkeypatch.setattr(DdtuneApp, "TICK_S", 3600.0)  # this test ticks by hand
    monkeypatch.setattr(main_screen, "LOG_EVERY_S", 3600.0)  # and no second is quiet enough
    app = DdtuneApp()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.main.log_pane
        app.main.post_message(m.LogLinesRead(numbered(1)))
        await pilot.pause()
        assert pane.lines == (f"{T} line 0000",)  # the first line of a quiet log: at once
        for start in (1, 2, 3):
            app.main.post_message(m.LogLinesRead(numbered(1, start=start)))
        await pilot.pause()
        assert pane.line_count == 1  # held
        app.main.tick(1)
        assert pane.lines[-1] == f"{T} line 0003" and pane.line_count == 4  # the tick shows them, in order
        app.main.post_message(m.LogLinesRead(numbered(2, start=4)))
        app.main.post_message(m.ServerChanged(ServerView(phase="ready")))
        await pilot.pause()
        assert pane.lines[-1] == f"{T} line 0005"  # the lines that led to a new phase come with it
        app.main.post_message(m.LogLinesRead(numbered(1, start=6)))
        app.main.post_message(m.ConfigMarked(1.0, "window 2048 -> 1024"))
        await pilot.pause()
        assert pane.lines[-2:] == (f"{T} line 0006", "--- ddtune: plot marker #1 window 2048 -> 1024")


async def test_end_after_a_search_far_right_shows_the_tail_from_its_first_column():
    """Issue 32: `/`, a word found at column 779 of a long line, Enter, Esc, End: the pane stayed
    scrolled 779 columns right, so every (short) line of the tail was blank and the border read
    `-> col 779`. End is the tail from its first column."""
    app = DdtuneApp()
    async with app.run_test(size=(120, 40)) as pilot:
        dump = f"{T} server_args=ServerArgs(" + ", ".join(f"arg_{i}={i}" for i in range(90)) + \
            ", speculative_draft_window_size=2048)"
        texts = [f"{T} filler {i}" for i in range(30)] + [dump] + [f"{T} tail {i}" for i in range(60)]
        app.main.post_message(m.LogLinesRead(read_lines(texts)))
        await pilot.pause()
        pane = app.main.query_one("#log", LogPane)
        await pilot.press("slash", *"speculative_draft_window_size", "enter")
        assert pane.current_match == 30 and pane.scroll_x > 700
        await pilot.press("escape")
        await pilot.press("end")
        await pilot.pause()
        assert pane.follow and pane.scroll_y == pane.max_scroll_y and pane.scroll_x == 0
        assert "col" not in str(pane.border_subtitle)
        height = pane.scrollable_content_region.height
        rows = [pane.render_line(y).text.strip() for y in range(height)]
        assert all(rows) and rows[-1] == f"{T} tail 59", rows

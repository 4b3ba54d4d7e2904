"""The requests table draws each row once (tui/widgets/requests_table.py): a flush with one new
request draws one new row and moves the others as they were; the columns lay out as the Rich
``Table(expand=True)`` it replaced did, and a box too narrow cuts the problem, then the verdict."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from textual.app import App

from tui.widgets.requests_table import COLUMNS, RequestsTable, column_widths, fit


def request(i: int, verdict: str = "pass", accept: float | None = 6.0) -> dict:
    return {"problem": ["fib", "gcd", "is_palindrome", "word_count"][i % 4], "tokens": 300 + i, "tok_s": 190.0 + i,
            "accept_len": accept, "ttft_s": 0.041, "verdict": verdict}


def filled(app, n: int = 5) -> RequestsTable:
    """The app's table with ``n`` requests shown (added, then flushed)."""
    table = app.query_one(RequestsTable)
    for i in range(n):
        table.add_request(request(i))
    table.flush()
    return table


class TableApp(App):
    AUTO_FOCUS = None  # as in the console, where the log has focus: no cursor row until focused

    def compose(self):
        yield RequestsTable(id="requests")


async def test_a_new_request_draws_one_row_and_the_rest_move_down_as_they_were():
    app = TableApp()
    async with app.run_test(size=(58, 12)) as pilot:
        table = filled(app)
        await pilot.pause()
        before = [table.render_line(y) for y in range(table.size.height)]
        drawn = []
        draw = table._draw

        def counting(*args, **kwargs):
            drawn.append(args[0])
            return draw(*args, **kwargs)

        table._draw = counting  # type: ignore[method-assign]
        table.add_request(request(5, verdict="fail"))
        assert table.render_line(1).text == before[1].text  # shown at the next flush, not before
        table.flush()
        await pilot.pause()
        after = [table.render_line(y) for y in range(table.size.height)]
        assert [texts[0] for texts in drawn] == ["gcd"]  # the newest row, drawn once; the rest were kept
        assert after[0] is before[0] and after[2:7] == before[1:6]
        assert "gcd" in after[1].text and "fail" in after[1].text


async def test_the_cursor_and_the_note_are_drawn_on_the_right_rows():
    app = TableApp()
    async with app.run_test(size=(58, 12)) as pilot:
        table = app.query_one(RequestsTable)
        for i in range(3):
            table.add_request(request(i, accept=None))
        table.flush()
        table.focus()
        await pilot.pause()
        await pilot.press("down")
        lines = [table.render_line(y) for y in range(4)]
        assert "n/a" in lines[1].text and "n/a" not in lines[2].text + lines[3].text
        reversed_rows = [y for y, line in enumerate(lines) if any(seg.style and seg.style.reverse for seg in line)]
        assert reversed_rows == [2]  # the cursor moved from the newest row to the next; the header never
        assert table.shown()[1] is table.picked


cell_text = st.text(alphabet="abcdefghij_.-0123456789", min_size=1, max_size=12)


@settings(max_examples=60)
@given(st.lists(st.tuples(*(cell_text for _ in COLUMNS)), min_size=1, max_size=6), st.integers(40, 120))
def test_the_columns_lay_out_as_an_expanding_rich_table(rows, width):
    widths = column_widths(rows, width)
    longest = [max(len(cells[i]) for cells in rows) for i in range(len(COLUMNS))]
    if sum(widths) + 2 * len(widths) > width or any(w < n for w, n in zip(widths, longest, strict=True)):
        return  # too narrow: cut (the next test); Rich's own squeeze is not what the console does
    table = Table(box=None, expand=True, padding=(0, 1), show_header=True)
    for header, right in COLUMNS:
        table.add_column(header, justify="right" if right else "left", no_wrap=True)
    for cells in rows:
        table.add_row(*cells)
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(table)
    ours = [" " + "  ".join(fit(text, w, right) for text, w, (_, right) in zip(cells, widths, COLUMNS, strict=True))
            + " " for cells in [tuple(h for h, _ in COLUMNS), *rows]]
    assert [line.ljust(width) for line in ours] == [line.ljust(width) for line in out.getvalue().splitlines()]


def test_a_narrow_box_cuts_the_problem_then_the_verdict():
    rows = [("a_long_problem_name", "300", "190", "6.00", "41ms", "cancelled (restart)")]
    natural = column_widths(rows, 200)
    assert sum(natural) + 12 == 200  # the slack shared out
    narrow = column_widths(rows, 56)
    assert narrow[0] < len("a_long_problem_name") and sum(narrow) + 12 == 56
    narrower = column_widths(rows, 40)
    assert narrower[0] == 8 and narrower[5] < len("cancelled (restart)")
    assert fit("cancelled (restart)", 7, False) == "cancel…" and fit("300", 6, True) == "   300"


async def test_past_the_rows_kept_each_flush_still_shows_the_newest():
    app = TableApp()
    async with app.run_test(size=(58, 8)) as pilot:
        table = app.query_one(RequestsTable)
        for i in range(150):  # past the 100 rows kept
            table.add_request(request(i))
        table.flush()
        await pilot.pause()
        assert table.render_line(1).text.split()[1] == "449"  # tokens 300 + 149: the newest
        table.add_request({**request(150), "tokens": 7})
        assert table.render_line(1).text.split()[1] == "449"  # not before the flush
        table.flush()
        await pilot.pause()
        assert table.render_line(1).text.split()[1] == "7" and table.render_line(2).text.split()[1] == "449"


def test_after_a_restart_the_problem_column_keeps_its_width():
    """Issue 32: the requests a restart cut off read "cancelled (restart)", wider than any other
    verdict; the columns keep to the widest text of the rows kept, so the problem column stayed cut
    for the next hundred requests. They read "cancelled" (grey; Enter says why)."""
    rows = [request(i) for i in range(8)] + [request(i, verdict="cancelled") for i in range(2)]
    widths = column_widths([tuple(map(str, (r["problem"], r["tokens"], "190", "6.00", "41ms", r["verdict"])))
                            for r in rows], 56)
    assert widths[0] >= len("is_palindrome") and widths[5] >= len("cancelled")


async def test_j_and_k_move_the_cursor_as_down_and_up_do():
    app = TableApp()
    async with app.run_test(size=(58, 12)) as pilot:
        table = filled(app)
        table.focus()
        await pilot.pause()
        await pilot.press("j", "j")
        assert table.picked is table.shown()[2]
        await pilot.press("k")
        assert table.picked is table.shown()[1]

"""The log pane: bounded, follows the tail unless the user scrolled up, filters re-render history."""

from textual.app import App

from tui.widgets.log_pane import LogPane


class LogApp(App):
    def compose(self):
        yield LogPane(max_lines=50, id="log")


async def test_follows_tail_bounded_and_respects_scroll_back():
    app = LogApp()
    async with app.run_test(size=(80, 12)) as pilot:
        log = app.query_one(LogPane)
        log.add_lines([f"line {i}" for i in range(200)])
        await pilot.pause()
        assert log.line_count == 50  # bounded
        assert log.lines[-1] == "line 199"
        assert log.scroll_y == log.max_scroll_y > 0  # at the tail
        log.scroll_to(y=0, animate=False, immediate=True)
        log.add_lines(["line 200"])
        await pilot.pause()
        assert log.scroll_y == 0  # reading old lines: not yanked to the end
        log.scroll_end(animate=False, immediate=True)
        log.add_lines(["line 201"])
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y


async def test_filters_rebuild_from_history():
    app = LogApp()
    async with app.run_test(size=(80, 12)) as pilot:
        log = app.query_one(LogPane)
        log.add_lines(["[t] Decode batch, #running-req: 1", "[t] INFO: GET /health",
                       "[t] Initialized DFLASH draft runner. draft_window_size=None, compact_cache=False",
                       "[t] Scheduler hit an exception: boom"])
        log.set_filter("decode")
        await pilot.pause()
        assert list(log.lines) == ["[t] Decode batch, #running-req: 1"]
        assert log.cycle_filter() == "all"
        assert log.line_count == 4
        log.set_filter("errors")
        assert list(log.lines) == ["[t] Scheduler hit an exception: boom"]
        log.set_filter("draft")
        assert len(log.lines) == 1 and "DFLASH" in log.lines[0]

"""Facts that reach the main screen while the app shuts down (a load worker's last request, the
tick) are dropped quietly: the alarm test once failed on a DOM query that found its widget gone."""

from __future__ import annotations

from tui import messages as m
from tui.app import DdtuneApp


async def test_messages_after_teardown_do_not_raise():
    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        main = app.main
    # The app has exited: every widget of the screen is removed. A late fact must not raise.
    assert not main.children
    main.tick(2)
    main.on_request_finished(m.RequestFinished({"problem": "fib", "tokens": 3, "verdict": "pass"}))
    main.on_load_state_changed(m.LoadStateChanged(False, "stopped"))
    main.on_config_marked(m.ConfigMarked(1.0, "window 2048 -> 1024"))


def test_the_tok_s_title_always_fits_its_plot():
    from tui.widgets.live_plots import tok_s_title

    assert tok_s_title(80, legend=False, approx=False) == "tok/s: client cyan, server grey"
    assert tok_s_title(30, legend=False, approx=False) == "tok/s: cyan client"  # 120x36: the long one was dropped
    assert tok_s_title(30, legend=True, approx=True) == "tok/s (approx)"
    assert tok_s_title(10, legend=False, approx=True) == "tok/s (approx)"  # never loses the approx mark

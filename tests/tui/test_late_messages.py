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

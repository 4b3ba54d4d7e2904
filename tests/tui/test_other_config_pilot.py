"""Issue 32: the console never stops another config's server without asking. Opened on config B
while config A's server runs in the same state dir, it asks (a dialog): keep it (nothing stopped,
the panel says why and how to ask again) or replace it."""

from __future__ import annotations

import os

from backends.knobs.config import load_config
from backends.server.session import ServerSession
from tests.backends.lifecycle_support import read_state, write_config
from tests.tui.test_console_pilot import log_text, panel, wait_until
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.quit_dialog import ConfirmReplace


async def test_the_console_asks_before_replacing_another_config_s_server(tmp_path, groups, state_dir):
    a, b = write_config(tmp_path, name="a.toml"), write_config(tmp_path, name="b.toml")
    session = ServerSession(load_config(a), stream_log=False)
    first = await session.up()
    groups.track(first.pgid)
    await session.close()
    app = DdtuneApp(ConsoleController(load_config(b), simulated=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmReplace), what="the replace dialog")
        text = str(app.screen.query_one("#replace-text").render())
        assert f"pid {first.pid}, ready" in text and str(a) in text and str(b) in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: "u: replace it" in (panel(app).fatal or ""), what="the refusal shown")
        assert f"runs another config, {a}" in panel(app).fatal
        assert read_state(state_dir)["pid"] == first.pid and os.kill(first.pid, 0) is None  # kept

        await pilot.press("u")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmReplace), what="the dialog again")
        await pilot.press("y")
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid not in (None, first.pid),
                         what="B's server ready")
        groups.track_state()
        assert read_state(state_dir)["config_source"] == str(b)
        assert f"stopping old server pid {first.pid}" in log_text(app)
        await app.controller.detach(stop_server=True)

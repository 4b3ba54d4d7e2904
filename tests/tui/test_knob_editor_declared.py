"""The console picks up a knob declared in the config with no code: the editor offers it with its
help line and generated validation, Apply restarts the simulator with it, and the server panel shows
it verified."""

from __future__ import annotations

from backends.knobs.config import load_config
from tests.backends.lifecycle_support import write_config
from tests.tui.test_console_pilot import panel, wait_until
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.knob_editor import KnobEditor

DECLARED = """[knob.log_every]
help = "decode steps between two decode log lines"
type = "int"
min = 1
max = 1000
unit = "steps"
flag = "--decode-log-interval"
verify = { server_info = "decode_log_interval" }

"""


async def test_the_editor_offers_a_declared_knob_and_the_panel_verifies_it(tmp_path, groups):
    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text().replace("[knobs]", DECLARED + "[knobs]"))
    app = DdtuneApp(ConsoleController(load_config(cfg), simulated=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        first_pid = panel(app).pid
        groups.track_state()
        assert "log_every" not in {row.name for row in panel(app).knobs}  # unset: not listed

        await pilot.press("k")
        editor = app.screen
        assert isinstance(editor, KnobEditor)
        field = editor.query_one("#knob-log_every")
        assert field.value == "none" and field.tooltip == "decode steps between two decode log lines [steps]; " \
                                                          "none = the server's default"
        assert editor.query_one("#knob-spec_v2").value == "none"  # the shipped declarations too
        field.value = "5000"
        await pilot.pause()
        assert "an integer from 1 to 1000" in str(editor.query_one("#note-log_every").render())
        assert editor.query_one("#apply").disabled
        field.value = "10"
        await pilot.pause()
        assert not editor.query_one("#apply").disabled
        await pilot.press("ctrl+s")

        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid not in (None, first_pid),
                         what="ready on a new pid")
        groups.track_state()
        row = {row.name: row for row in panel(app).knobs}["log_every"]
        assert (row.requested, row.effective, row.verified) == ("10", "10", True)
        await app.controller.detach(stop_server=True)

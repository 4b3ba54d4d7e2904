"""The console's log pane on a simulator launched with --api-key: SGLang's server_args dump (key
included) reaches the pane masked, and the key is nowhere in it (issue 19, item 4)."""

from __future__ import annotations

import pytest

from tests.tui.test_console_pilot import app_for, log_text, panel, wait_until

KEY = "sk-pane-5be1f09a73"


@pytest.mark.parametrize("version, masked", [("0.5.11", "api_key='***'"), ("0.5.23", "'api_key': '***'")])
async def test_the_log_pane_shows_the_server_args_dump_without_the_key(tmp_path, groups, state_dir, monkeypatch,
                                                                        version, masked):
    monkeypatch.delenv("DDTUNE_API_KEY", raising=False)
    app = app_for(tmp_path, extra=("--sim-load-seconds", "0.3", "--sim-version", version, "--api-key", KEY))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="ready")
        groups.track_state()
        await wait_until(pilot, lambda: "server_args=" in log_text(app), what="the server_args dump in the pane")
        text = log_text(app)
        assert masked in text and KEY not in text
        log = next((state_dir / "logs").glob("server-*.log")).read_text()
        assert KEY in log  # the server printed it: the pane's reader took it out
        await app.controller.detach(stop_server=True)

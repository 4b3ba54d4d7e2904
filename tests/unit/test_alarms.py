"""The acceptance-collapse guard: pure rules, then the real simulator forced to 1.0 through the
headless commands (status --json judges the recent log) and the console's panel."""

from __future__ import annotations

import json

from backends.logs.alarms import AcceptanceWatch, alarms_from_log
from tests.backends.lifecycle_support import write_config
from tests.helpers import run_ddtune


def test_twenty_seconds_at_one_raises_and_one_good_line_clears():
    watch = AcceptanceWatch()
    for t in range(0, 20):
        assert watch.decode(float(t), 1.0) is None
    alarm = watch.decode(20.0, 1.02)
    assert alarm is not None and alarm.kind == "acceptance_collapse" and alarm.since == 0.0
    assert "1.02 <= 1.10" in alarm.message
    assert watch.decode(21.0, 3.4) is None and watch.alarm is None
    assert watch.decode(22.0, None) is None  # a line without acceptance changes nothing


def test_a_dip_shorter_than_the_window_or_above_the_threshold_is_no_alarm():
    watch = AcceptanceWatch()
    for t in range(0, 100):
        assert watch.decode(float(t), 1.0 if t % 15 else 2.5) is None  # never 20 s low in a row
    for t in range(100, 200):
        assert watch.decode(float(t), 1.2) is None  # above 1.10: helping, if little


def test_fifty_low_requests_in_a_row_raise():
    watch = AcceptanceWatch()
    assert all(watch.request(1.0) is None for _ in range(49))
    assert watch.request(1.05) is not None
    assert watch.request(2.0) is None


def test_a_plain_server_never_raises():
    lines = [f"[2026-12-01 10:00:{s:02d}] Decode batch, #running-req: 4, #token: 100, token usage: 0.00, "
             f"accept len: 1.00, accept rate: 0.00, cuda graph: True, gen throughput (token/s): 900.00, "
             f"#queue-req: 0" for s in range(0, 60)]
    assert alarms_from_log(lines, speculative=False) == []
    [alarm] = alarms_from_log(lines, speculative=True)
    assert alarm.kind == "acceptance_collapse"


def test_status_json_raises_the_collapse_on_a_forced_simulator(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.3", "--sim-acceptance", "1.0", "--sim-step-ms", "5"))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    status = json.loads(run_ddtune("--config", str(cfg), "status", "--json").stdout)
    assert status["alarms"] == []  # nothing decoded yet
    url = status["url"]
    load = run_ddtune("load", "--url", url, "--concurrency", "4", "--duration", "24", "--max-tokens", "256",
                      "--json", timeout=120)
    assert load.returncode == 0, load.stderr
    status = json.loads(run_ddtune("--config", str(cfg), "status", "--json").stdout)
    assert [a["kind"] for a in status["alarms"]] == ["acceptance_collapse"], status["alarms"]
    text = run_ddtune("--config", str(cfg), "status").stdout
    assert "ALARM:      acceptance_collapse" in text
    assert run_ddtune("--config", str(cfg), "down").returncode == 0


async def test_the_console_shows_the_collapse_loudly(tmp_path, groups):
    from backends.knobs.config import load_config
    from tests.tui.test_console_pilot import panel, wait_until
    from tui.app import DdtuneApp
    from tui.controller import ConsoleController

    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.3", "--sim-acceptance", "1.0", "--sim-step-ms", "5"))
    # 64-token answers: 50 requests take ~800 verify steps, the decode lines' 20 s ~4000, so the
    # console's own requests (the guard's per-request input) trip it first.
    app = DdtuneApp(ConsoleController(load_config(cfg), simulated=True, load_concurrency=4, load_max_tokens=64,
                                      autostart_load=True))

    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="ready")
        groups.track_state()
        await wait_until(pilot, lambda: panel(app).alarm is not None, timeout=60, what="the collapse alarm")
        assert "acceptance 1.00 <= 1.10" in panel(app).alarm
        assert "50 requests in a row" in panel(app).alarm
        await app.controller.detach(stop_server=True)

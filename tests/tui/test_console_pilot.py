"""Pilot tests of the console on the real simulator: apply knobs -> restart -> ready -> verified,
the old-process race, a crash with its fatal line, and quitting with the server left running."""

from __future__ import annotations

import time

from backends.knobs.config import load_config
from backends.knobs.plan import KNOBS
from tests.backends.lifecycle_support import PHASED, write_config
from tui.app import DdtuneApp
from tui.controller import ConsoleController
from tui.screens.knob_editor import KnobEditor
from tui.widgets.log_pane import LogPane
from tui.widgets.server_panel import ServerPanel


async def wait_until(pilot, predicate, timeout=45.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await pilot.pause(0.1)
    view = pilot.app.main.query_one(ServerPanel).view
    raise AssertionError(f"timed out waiting for {what}; server view: {view}")


def app_for(tmp_path, config_file=None, **kw) -> DdtuneApp:
    config = load_config(config_file or write_config(tmp_path, **kw))
    return DdtuneApp(ConsoleController(config, simulated=True))


def panel(app):
    return app.main.query_one(ServerPanel).view


def panel_views(app) -> list:
    """Every view the server panel is given from now on, as it is given (a watcher on the reactive):
    a phase that passes between two looks of a polling test is still in it."""
    seen: list = []
    widget = app.main.query_one(ServerPanel)
    app.main.watch(widget, "view", lambda view: seen.append(view), init=False)  # a function: watch wants one
    return seen


def log_text(app) -> str:
    return "\n".join(app.main.query_one(LogPane).lines)


async def test_apply_window_restarts_and_verifies(tmp_path, groups):
    app = app_for(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        first_pid = panel(app).pid
        groups.track_state()
        window = {row.name: row for row in panel(app).knobs}["window"]
        assert (window.requested, window.effective, window.verified) == ("2048", "2048", True)

        await pilot.press("k")
        editor = app.screen
        assert isinstance(editor, KnobEditor)
        assert editor.query_one("#knob-window").tooltip == KNOBS["window"].describe()  # the table's help line
        editor.query_one("#knob-window").value = "8"
        await pilot.pause()
        assert "block size" in str(editor.query_one("#note-window").render())
        assert editor.query_one("#apply").disabled
        editor.query_one("#knob-window").value = "1024"
        await pilot.pause()
        assert not editor.query_one("#apply").disabled
        await pilot.press("ctrl+s")

        await wait_until(pilot, lambda: panel(app).phase not in ("ready",) or panel(app).pid != first_pid,
                         what="restart to begin")
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid not in (None, first_pid),
                         what="ready on a new pid")
        groups.track_state()
        window = {row.name: row for row in panel(app).knobs}["window"]
        assert (window.requested, window.effective, window.verified) == ("1024", "1024", True)
        assert "draft_window_size=1024, compact_cache=True" in log_text(app)
        await app.controller.detach(stop_server=True)


async def test_old_process_race_is_shown_as_waiting(tmp_path, groups):
    # the old server answers for 1.5 s after SIGTERM: a race the panel must show as stopping-old, not ready
    app = app_for(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-drain-seconds", "1.5"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        first_pid = panel(app).pid
        groups.track_state()
        views = panel_views(app)
        app.controller.restart_with({"window": 4096})
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid != first_pid, timeout=60,
                         what="the restarted server ready")
        groups.track_state()
        assert "stopping-old" in {view.phase for view in views}
        assert f"stopping old server pid {first_pid}" in log_text(app)
        await app.controller.detach(stop_server=True)


async def test_crash_shows_fatal_line(tmp_path, groups):
    app = app_for(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-fail-at", "capture"))
    async with app.run_test(size=(120, 40)) as pilot:
        # The first fatal line is "Scheduler hit an exception"; the root cause (OOM) follows it, and
        # the panel must end up naming the root cause.
        await wait_until(pilot,
                         lambda: panel(app).phase == "failed" and "out of memory" in (panel(app).fatal or "").lower(),
                         what="failure naming the OOM")
        groups.track_state()
        assert "CUDA out of memory" in log_text(app)


async def test_quit_leaves_server_running_by_default(tmp_path, groups, state_dir):
    config_file = write_config(tmp_path)
    app = app_for(tmp_path, config_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="ready")
        pid = panel(app).pid
        groups.track_state()
        await pilot.press("q")
        await pilot.press("l")
        await pilot.pause(0.5)
    import psutil

    assert psutil.pid_exists(pid), "leaving must not stop the server"
    # A second console re-attaches instead of restarting.
    app2 = app_for(tmp_path, config_file)
    async with app2.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app2).phase == "ready", what="re-attach")
        assert panel(app2).pid == pid
        assert "re-attached to pid" in log_text(app2)
        await app2.controller.detach(stop_server=True)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_a_headless_restart_beside_the_console_shows_in_the_panel(tmp_path, groups):
    """`ddtune restart --set window=1024` in another terminal: the console's panel shows its phases,
    the new pid and the verified knob, with no resync and no restart of its own."""
    import asyncio

    from tests.helpers import REPO, ddtune_cmd, ddtune_env

    config_file = write_config(tmp_path, extra=PHASED)
    app = app_for(tmp_path, config_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        first_pid = panel(app).pid
        groups.track_state()
        proc = await asyncio.create_subprocess_exec(
            *ddtune_cmd("--config", str(config_file), "restart", "--set", "window=1024"), cwd=REPO,
            env=ddtune_env(), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        phases = set()
        # what the panel shows after each of the session's events (sampling the screen could miss a
        # phase that lasts a few milliseconds on the simulator)
        app.controller.session.subscribe(lambda event: phases.add(app.controller.view().phase))
        while proc.returncode is None:
            await pilot.pause(0.05)
            try:
                await asyncio.wait_for(proc.wait(), 0.01)
            except TimeoutError:
                pass
        new = groups.track_state()
        assert proc.returncode == 0 and new["pid"] != first_pid
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid == new["pid"],
                         what="the panel to show the new pid, ready")
        assert {"stopping-old", "loading-weights"} <= phases, phases
        window = {row.name: row for row in panel(app).knobs}["window"]
        assert (window.requested, window.effective, window.verified) == ("1024", "1024", True)
        assert f"pid {new['pid']} launched by another ddtune" in log_text(app)
        await app.controller.detach(stop_server=True)


async def test_reattach_keeps_a_tuned_server_and_a_applies_the_file(tmp_path, groups):
    """Tuned with `restart --set`, then the console opens: it keeps that server (no reload), says the
    knobs differ from the file, and `a` asks first (as `x` does, issue 22 item 6), then restarts it
    with the file's knobs."""
    import psutil

    from tests.helpers import run_ddtune
    from tui.screens.quit_dialog import ConfirmApply

    config_file = write_config(tmp_path)
    for args in (("up",), ("restart", "--set", "window=1024")):
        out = run_ddtune("--config", str(config_file), *args)
        groups.track_state()
        assert out.returncode == 0, out.stderr
    tuned = groups.track_state()
    app = app_for(tmp_path, config_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="re-attach")
        assert panel(app).pid == tuned["pid"]
        window = {row.name: row for row in panel(app).knobs}["window"]
        assert (window.requested, window.effective, window.verified) == ("1024", "1024", True)
        assert "window=1024 (the file says 2048)" in log_text(app)
        assert "it already runs this config" not in log_text(app)  # issue 32: one note, not two that disagree
        assert app.controller.live.ab.current.knobs["window"] == 1024  # the A/B labels what runs
        assert "plot marker" not in log_text(app) and not app.main.plots.markers  # a change made before this session
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmApply)
        assert "window 1024 -> 2048" in str(app.screen.query_one("#changes").render())
        await pilot.press("escape")  # keep it
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmApply)
        assert panel(app).phase == "ready" and panel(app).pid == tuned["pid"] and psutil.pid_exists(tuned["pid"])
        await pilot.press("a", "y")
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid != tuned["pid"],
                         what="the restart with the file's knobs")
        groups.track_state()
        window = {row.name: row for row in panel(app).knobs}["window"]
        assert (window.requested, window.effective, window.verified) == ("2048", "2048", True)
        await app.controller.detach(stop_server=True)


async def test_stop_and_start_from_the_console_and_ctrl_c_asks_first(tmp_path, groups):
    """x asks, then stops the server; u starts it again; Ctrl+C and Ctrl+Q open the quit question;
    every action is in the command palette."""
    import psutil

    from tui.screens.quit_dialog import ConfirmStop, QuitDialog

    app = app_for(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: panel(app).phase == "ready", what="first ready")
        first_pid = panel(app).pid
        groups.track_state()
        for key in ("ctrl+c", "ctrl+q"):
            await pilot.press(key)
            assert isinstance(app.screen, QuitDialog)
            await pilot.press("escape")
            assert not isinstance(app.screen, QuitDialog)
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmStop)
        await pilot.press("escape")  # keep it
        await pilot.pause(0.3)
        assert panel(app).phase == "ready" and psutil.pid_exists(first_pid)
        await pilot.press("x", "y")
        await wait_until(pilot, lambda: panel(app).phase == "stopped", what="the stop")
        assert not psutil.pid_exists(first_pid) or psutil.Process(first_pid).status() == psutil.STATUS_ZOMBIE
        await pilot.press("q")  # issue 32: nothing runs, so nothing is offered to leave running or to stop
        assert isinstance(app.screen, QuitDialog)
        from textual.widgets import Button

        assert [str(b.label) for b in app.screen.query(Button)] == ["Quit [l]", "Stay [esc]"]
        await pilot.press("s")  # no stop to choose
        assert isinstance(app.screen, QuitDialog)
        await pilot.press("escape")
        await pilot.press("u")
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid != first_pid, what="the start")
        groups.track_state()
        titles = {cmd.title for cmd in app.get_system_commands(app.screen)}
        # issue 32: each action with its key, so the palette teaches the keys
        assert {"Edit knobs (k)", "Stop the server (x)", "GPU processes (g)", "Help (?)", "Quit (q)"} <= titles
        assert all(any(t.startswith(f"{title} (") for t in titles) for title, _, _ in app.ACTIONS), titles
        await app.controller.detach(stop_server=True)


async def test_apply_keeps_the_load_running_and_records_a_run_per_configuration(tmp_path, groups, state_dir):
    """Load on, Apply window=1024: the load pauses, the requests in flight are cancelled (shown, not
    scored), it resumes by itself once the new server is verified, and each configuration's share
    is recorded as a run (kind load) with that server's knobs."""
    import json

    from tui.widgets.requests_table import RequestsTable

    # no seeded wrong answers: a wrong two_sum scores `error`, which would look like a restart's
    config = load_config(write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-step-ms", "5",
                                                       "--sim-wrong-rate", "0")))
    app = DdtuneApp(ConsoleController(config, simulated=True, load_concurrency=4, load_max_tokens=64,
                                      autostart_load=True))
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.main.query_one(RequestsTable)
        await wait_until(pilot, lambda: panel(app).phase == "ready" and table.total >= 4, what="load running")
        first_pid = panel(app).pid
        groups.track_state()
        app.controller.restart_with({"window": 1024})
        await wait_until(pilot, lambda: panel(app).phase == "ready" and panel(app).pid != first_pid,
                         what="ready on a new pid")
        groups.track_state()
        before = table.total
        await wait_until(pilot, lambda: table.total >= before + 4, what="the load to resume by itself")
        assert app.controller.load_running and "streams" in str(table.border_subtitle)
        verdicts = [row["verdict"] for row in table.rows]
        assert "error" not in verdicts, verdicts
        await app.controller.detach(stop_server=True)
    runs = sorted((state_dir / "runs").glob("*-load"))
    docs = [json.loads((r / "run.json").read_text()) for r in runs]
    assert [d["server"]["knobs"].get("window") for d in docs] == [2048, 1024], docs
    assert docs[0]["summary"]["reason"] == "restart" and docs[0]["status"] == "interrupted"  # cut short, not failed
    assert docs[0]["summary"]["finished"] >= 4 and docs[1]["summary"]["finished"] >= 4
    assert all(d["source"] == "console" for d in docs)
    responses = (runs[1] / "responses.jsonl").read_text().splitlines()
    assert len(responses) >= 4
    from workloads.report import list_runs  # and the results screen (r) lists both

    listed = list_runs()
    assert [r.kind for r in listed] == ["load", "load"] and all("(console)" in r.summary for r in listed)
    assert listed[1].status == "interrupted (restart)"  # the share of window=2048, listed second (newest first)


async def test_quitting_from_an_endpoint_offers_no_stop():
    from textual.widgets import Button

    from tui.screens.quit_dialog import QuitDialog

    app = DdtuneApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(QuitDialog(can_stop=False))
        await pilot.pause()
        assert [b.id for b in app.screen.query(Button)] == ["leave", "stay"]
        await pilot.press("s")  # the stop key does nothing here
        assert isinstance(app.screen, QuitDialog)

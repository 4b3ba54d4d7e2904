"""Failures explain themselves in the console (issue 22, item 10): Enter on a request row opens its
detail, the grader's line (which test failed) or the request's error, as the load worker sent it;
and on the simulator the requests box and the server panel say it answers a share wrong on purpose."""

from __future__ import annotations

import argparse

from textual.widgets import Static

from backends.server import console_setup
from backends.sim.args import wrong_rate
from tui import messages as m
from tui.app import DdtuneApp
from tui.commands import console
from tui.controller import ConsoleController
from tui.screens.request_detail import RequestDetail
from tui.views import ServerView
from workloads.live.events import RequestDone

FAILED = RequestDone("fib", True, 120, 180.0, 5.5, 0.04, 1.2, "fail", "test 2 of 4 failed: fib(10) == 55")
ERRORED = RequestDone("gcd", False, 0, 0.0, None, None, 0.5, "error", "HTTP 503: server overloaded")
PASSED = RequestDone("word_count", True, 90, 200.0, 6.0, 0.04, 0.9, "pass", "4 of 4 tests passed")


def test_the_table_row_carries_the_reason():
    assert FAILED.row()["detail"] == "test 2 of 4 failed: fib(10) == 55"
    assert ERRORED.row()["detail"] == "HTTP 503: server overloaded"


def test_the_wrong_rate_comes_from_the_simulator_args():
    assert wrong_rate(()) == 0.1
    assert wrong_rate(("--sim-wrong-rate", "0.25")) == 0.25 and wrong_rate(("--sim-wrong-rate=0",)) == 0.0


async def test_enter_on_a_request_row_says_why_it_failed():
    app = DdtuneApp()
    async with app.run_test(size=(160, 50)) as pilot:
        main = app.main
        main.say_sim_wrong(0.1)
        for done in (FAILED, ERRORED, PASSED):  # newest last: the table shows word_count, gcd, fib
            main.post_message(m.RequestFinished(done.row()))
        await pilot.pause()
        main.requests.flush()
        main.requests.focus()
        await pilot.pause()
        await pilot.press("down", "down", "enter")  # newest -> gcd -> fib
        assert isinstance(app.screen, RequestDetail)
        text = str(app.screen.query_one("#request-detail", Static).render())
        assert "fib" in text and "fail" in text and "test 2 of 4 failed: fib(10) == 55" in text
        assert "10% of the problems wrong on purpose" in text
        await pilot.press("escape")
        await pilot.press("up", "enter")
        text = str(app.screen.query_one("#request-detail", Static).render())
        assert "gcd" in text and "HTTP 503: server overloaded" in text and "on purpose" not in text


async def test_on_the_simulator_the_console_says_it_answers_wrong_on_purpose(monkeypatch, tmp_path):
    """As ``ddtune`` opens it (tui.commands.console): the setup read from the config file says the
    simulator's rate, and the console says it."""
    monkeypatch.setattr(ConsoleController, "attach", lambda self, post, run_worker: None)  # no server here
    opened: list[DdtuneApp] = []
    monkeypatch.setattr(DdtuneApp, "run", lambda self: opened.append(self))  # run below, under the pilot
    path = tmp_path / "sim.toml"
    path.write_text('[server]\nbackend = "sim"\nextra_args = ["--sim-wrong-rate", "0.2"]\n')
    setup = console_setup(str(path))
    assert setup.simulated and setup.sim_wrong == 0.2
    assert console.run(argparse.Namespace(config=str(path))) == 0
    app = opened[0]
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert str(app.main.requests.border_title) == "requests · sim: 20% wrong on purpose"
        app.main.post_message(m.ServerChanged(ServerView(phase="ready")))
        app.main.post_message(m.RequestFinished(FAILED.row()))
        await pilot.pause()
        app.main.requests.flush()
        assert str(app.main.requests.border_title) == "requests: 0/1 pass · sim: 20% wrong on purpose"
        assert "sim: 20% of answers wrong on purpose" in str(app.main.server.render().renderables[1])

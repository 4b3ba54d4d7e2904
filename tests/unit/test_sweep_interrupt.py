"""``ddtune sweep|ab|search`` cut short: the line that says how to continue names the run's folder once the
run started (its first event), else --out; with neither nothing was recorded, and saying ``--resume``
would continue another, older run."""

from __future__ import annotations

import asyncio
import os
import signal

from tui.commands._sweep import until_done


class Printer:
    def __init__(self, path: str | None) -> None:
        self.path = path


async def _terminated() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # the handler until_done installs cancels the run, as Ctrl-C does
    await asyncio.sleep(30)


def test_sigterm_mid_run_names_the_folder_to_resume(capsys):
    assert until_done(_terminated, Printer("/runs/x-sweep"), "sweep", "ddtune ab", None) is None
    assert capsys.readouterr().err == "sweep interrupted; continue it with: ddtune ab --resume --out /runs/x-sweep\n"


def test_an_interrupt_before_the_run_started_says_nothing_was_recorded(capsys):
    assert until_done(_terminated, Printer(None), "search", "ddtune search", None) is None
    assert capsys.readouterr().err == "search interrupted before it started\n"
    assert until_done(_terminated, Printer(None), "search", "ddtune search", "box") is None
    assert capsys.readouterr().err == "search interrupted; continue it with: ddtune search --resume --out box\n"


def test_a_run_that_ends_gives_its_outcome():
    async def done() -> str:
        return "outcome"

    assert until_done(done, Printer(None), "sweep", "ddtune sweep", None) == "outcome"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone with the run

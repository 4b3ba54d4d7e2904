"""The console's live load, as the controller shows it: the use case (workloads.live.ConsoleLoad) runs
the load worker, its pauses around restarts, the A/B and the baseline lookup; this turns what it hands
over into the main screen's messages, and hands it what the user asks.

The load runs in its own process: this process only renders. A server restart (ours, a sweep's or
another ddtune's) pauses it: requests in flight are cancelled and shown as "cancelled" (grey; Enter
says why), never scored; it resumes once the new server is verified. A mixin of ``ConsoleController``
(tui/controller.py), which owns the session and the wiring.
"""

from __future__ import annotations

import time
from typing import assert_never

from textual.message import Message

from backends.logs import LogLine
from tui import messages as m
from workloads.live import Comparison, ConsoleLoad, LoadState, NoSpecBaseline, RequestDone, StatsUpdated


def note_line(text: str) -> LogLine:
    return LogLine.ddtune(f"--- ddtune: {text}")


class LiveLoad:
    live: ConsoleLoad

    def post(self, message: Message) -> None:
        raise NotImplementedError

    @property
    def load_running(self) -> bool:
        return self.live.running

    @property
    def load_prompts(self) -> str:
        return self.live.prompts

    def toggle_load(self) -> bool:
        """The user's ``l``: whether the load is starting (True) or stopping."""
        return self.live.toggle()

    def choose_prompts(self, source: str) -> bool:
        """The load's prompt source from now on; whether a running load was restarted on it."""
        return self.live.choose(source)

    async def hold_load(self, what: str) -> None:
        """A sweep or search (``what``) needs the server to itself: the load pauses until ``release_load``."""
        await self.live.hold(what)

    def release_load(self) -> None:
        self.live.release()

    def show_load(self, update: StatsUpdated | RequestDone | LoadState | NoSpecBaseline | Comparison) -> None:
        """What the load hands over, as the main screen's messages."""
        match update:
            case StatsUpdated(stats=s):
                # a tick worth plotting: the load runs and its 1 s rate covers a second at least (a rate
                # over the first moments after a (re)start reads the requests' time to first token)
                roll, one = s.window_roll, s.window_1s
                self.post(m.LoadWindowUpdated(time.monotonic(), roll.tokens_per_s, roll.acceptance, s.in_flight,
                                              one.tokens_per_s, roll.approx or one.approx, roll.window_s,
                                              roll.acceptance_source))
            case RequestDone():
                self.post(m.RequestFinished(update.row()))  # a pause's cut-off request: "cancelled" (grey)
            case LoadState(running=running, detail=detail, source=source):
                self.post(m.LoadSourceChanged(source))
                if detail is not None:
                    self.post(m.LoadStateChanged(running, detail))
                    self.post(m.LogLinesRead((note_line(f"load {'on' if running else 'off'}: {detail}"),)))
            case NoSpecBaseline(tok_s=tok_s, source=source):
                self.post(m.NoSpecBaselineFound(tok_s, source))
            case Comparison():
                self.post(m.ComparisonChanged(update))
            case _:
                assert_never(update)

"""What the console's search screen shows of a search's events, as plain data: one table row per
configuration the search started (waves, tok/s with its 95% interval, how often its server was started,
its state), the round under way with the last race's decision, the restarts against a full grid's, the
best at the end, and the notices. The screen draws a ``Change`` as it comes; nothing here knows a widget.

Text is marked with a tone ("" plain, "strong", "good", "win", "bad", "warn", "cmd"), never markup: a label
or a folder can hold any character.

Every event of the unions is matched (``assert_never``): a new search or sweep event fails the type
check here until it says what the screen shows of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import assert_never

from workloads.runs.store import home_short
from workloads.search.events import (
    RoundFinished, RoundProgress, RoundStarted, SearchEvent, SearchFinished, SearchStarted,
)
from workloads.report.search_summary import summary_lines
from workloads.search.report import decision_line, round_title
from workloads.search.space import SearchSpace
from workloads.stats.estimate import Estimate
from workloads.sweep.board import Mark
from workloads.sweep.events import (
    CellFinished, EvalFinished, LaneClosed, LaneEvent, LaneMoved, LanesStarted, LosslessChecked, ServerApplied,
    ServerPhaseChanged, SlotFinished, SlotStarted, SweepEvent, SweepFinished, SweepStarted,
)

COLUMNS = ("configuration", "waves", "tok/s ± 95%", "starts", "state")
WAVES, TOK, STARTS, STATE = 1, 2, 3, 4
STATE_WIDTH = 18  # the state column's text at most: a 3-knob label and the figures leave this much at 80 columns
_FRACTION = re.compile(r"\d+/\d+")


def phase_text(phase: str, detail: str) -> str:
    """A server phase for the state column, with its progress when it has one: ``warmup``,
    ``loading 3/8`` (loading-weights, shortened to fit)."""
    found = _FRACTION.search(detail or "")
    text = f"{phase} {found.group(0)}" if found else phase
    if len(text) > STATE_WIDTH:
        text = f"{phase.split('-')[0]} {found.group(0)}" if found else phase
    return text[:STATE_WIDTH]


def tok_cell(est: Estimate | None) -> str:
    """``780 ± 11`` (half the 95% interval), ``780`` from one wave, ``-`` before any."""
    if est is None:
        return "-"
    half = est.half_width
    return f"{est.mean:.0f}" + (f" ± {half:.0f}" if half is not None else "")


def best_marks(summary: dict) -> list[Mark]:
    """summary_lines (what ``ddtune search`` prints at the end) with the best and its verdict marked."""
    out = []
    for i, line in enumerate(summary_lines(summary)):
        tone = ""
        if line.startswith("best:"):
            tone = "strong"
        elif "not clear at 95%" in line:
            tone = "warn"
        elif "clear at 95%" in line:
            tone = "good"
        elif line.startswith("run it:"):
            tone = "cmd"
            line += "  (here: a)"
        out.append(Mark(("\n" if i else "") + line, tone))
    return out


@dataclass
class Change:
    """What one event changes on the screen: new rows (their labels), cells (label, column, Mark), the
    round panel, the restarts line and the best (None: unchanged), notices (text, an error); and the
    lines a log gets of it."""

    rows: list[str] = field(default_factory=list)
    cells: list[tuple[str, int, Mark]] = field(default_factory=list)
    round: list[Mark] | None = None
    restarts: str | None = None
    best: list[Mark] | None = None
    notices: list[tuple[str, bool]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the log's lines for it (a SearchView's: ddtune search's stderr)


class SearchBoard:
    """The search screen's state as events fill it; ``board(event)`` says what changed."""

    columns = COLUMNS

    def __init__(self) -> None:
        self.space: SearchSpace | None = None  # once the search started
        self.path: str | None = None           # the search's folder, once created
        self.restarts = 0
        self.labels: set[str] = set()         # the configurations with a row
        self.starts: dict[str, int] = {}
        self.round_marks: list[Mark] = []
        self.decision = ""  # how the last race ended
        self.best: dict | None = None  # the best configuration of a search done: {"label", "knobs", ...}

    def interrupted_line(self) -> str:
        return ("search stopped before it was created" if self.path is None else
                f"search interrupted; continue it with: ddtune search --resume --out {home_short(self.path)}")

    @staticmethod
    def said_at_once(event: SearchEvent) -> list[str]:
        """What the operator is told at once, even after the screen is gone: the lanes' notes, and what
        was done with each lane's server at the end."""
        match event:
            case LanesStarted():
                return list(event.notes)
            case LaneClosed():
                return [f"lane {event.lane}: {event.what}"]
            case SearchStarted() | RoundStarted() | RoundProgress() | RoundFinished() | SearchFinished():
                return []
            case _:
                assert_never(event)

    def _restarts(self, extra: str = "") -> str:
        return f"restarts: {self.restarts} of a full grid's {self.space.size if self.space else 0}{extra}"

    def __call__(self, event: SearchEvent) -> Change:
        change = Change()
        match event:
            case RoundProgress():
                self._progress(event.event, "", change)
            case SearchStarted():
                space = self.space = event.space
                self.path = event.path
                change.round = [Mark(f"search of {space.size} configurations ({space.shape}): one pass starts about "
                                     f"{space.one_pass}; from {space.label(event.start)}\n"
                                     f"folder {home_short(event.path)}")]
                change.restarts = self._restarts()
            case RoundStarted():
                self._round_started(event, change)
            case RoundFinished():
                self._round_finished(event, change)
            case SearchFinished():
                self._finished(event, change)
            case LanesStarted() | LaneClosed():  # said at once (said_at_once)
                pass
            case _:
                assert_never(event)
        return change

    def _round_started(self, event: RoundStarted, change: Change) -> None:
        space = self.space
        if space is None:
            return
        for ask in event.plan.asks:
            label = space.label(ask.point)
            if label not in self.labels:
                self.labels.add(label)
                change.rows.append(label)
            change.cells.append((label, STATE, Mark(f"round {event.plan.number}: {event.plan.need} waves")))
        self.round_marks = [Mark(round_title(space, event.plan), "strong"),
                            Mark(f"\ncandidates: {', '.join(space.label(a.point) for a in event.plan.asks)}")]
        change.round = self.round_marks + ([Mark(f"\nlast race: {self.decision}")] if self.decision else [])
        change.restarts = self._restarts(f"; this round up to {event.restarts_needed} more")

    def _progress(self, event: SweepEvent, where: str, change: Change) -> None:
        """A sweep event of the round under way: the configuration's state in the table."""
        match event:
            case LaneEvent():
                self._progress(event.event, f"lane {event.lane}: ", change)
            case SlotStarted():
                change.cells.append((event.slot.config, STATE,
                                     Mark(where + ("restarting" if event.restart else "measuring"))))
            case ServerPhaseChanged():
                change.cells.append((event.slot.config, STATE, Mark(where + phase_text(event.phase, event.detail))))
            case ServerApplied():
                change.cells.append((event.slot.config, STATE,
                                     Mark(where + ("measuring" if event.applied.ok else "server FAILED"))))
            case (SweepStarted() | CellFinished() | EvalFinished() | LosslessChecked() | SlotFinished()
                  | SweepFinished() | LanesStarted() | LaneMoved() | LaneClosed()):
                pass
            case _:
                assert_never(event)

    def _round_finished(self, event: RoundFinished, change: Change) -> None:
        space = self.space
        if space is None:
            return
        for obs, est in zip(event.observations, event.estimates, strict=True):
            label = space.label(obs.point)
            self.starts[label] = self.starts.get(label, 0) + int(obs.restarted)
            self.restarts += int(obs.restarted)
            change.cells += [(label, WAVES, Mark(str(est.n if est is not None else 0))),
                             (label, TOK, Mark(tok_cell(est))), (label, STARTS, Mark(str(self.starts[label])))]
            if obs.failed:
                reason = obs.failed.splitlines()[0]
                change.cells.append((label, STATE, Mark(f"FAILED: {reason}"[:STATE_WIDTH], "bad")))
                change.notices.append((f"{label} FAILED (left out of the search): {reason}", True))
            else:
                change.cells.append((label, STATE, Mark("measured")))
        if event.decisions:
            self.decision = decision_line(space, event.decisions[-1]).strip().removeprefix("-> ")
            change.round = self.round_marks + [Mark(f"\nlast race: {self.decision}")]
        change.restarts = self._restarts()

    def _finished(self, event: SearchFinished, change: Change) -> None:
        summary, self.path = event.summary, event.path
        restarts = summary.get("restarts") or {}
        self.restarts = int(restarts.get("used", self.restarts))
        change.restarts = self._restarts(f" ({restarts['share']:.0%})" if restarts.get("share") is not None else "")
        if event.status != "done":
            change.round = [Mark(self.interrupted_line(), "warn")]
        else:
            change.round = [Mark("search done", "strong"), Mark(f" in {summary.get('rounds')} round(s)" +
                                                                 (f"; last race: {self.decision}" if self.decision
                                                                  else ""))]
        best, rival = summary.get("best"), summary.get("rival")
        if best is not None:
            change.cells.append((best["label"], STATE, Mark("BEST", "win")))
        if rival is not None:
            change.cells.append((rival["label"], STATE, Mark("closest rival")))
        if event.status == "done":
            self.best = best
            change.best = best_marks(summary)

"""The plain-text lines a search's events make (``ddtune search`` writes them to stderr while it runs;
the engine prints nothing): the space and the plan, each round's title, restarts and results, each
race's decision; on lanes each line of a round names its lane and GPUs.

Every event of the unions is matched (``assert_never``): a new search or sweep event fails the type
check here until it says whether it is worth a line.
"""

from __future__ import annotations

import statistics
from typing import assert_never

from workloads.search.events import (
    RoundFinished, RoundProgress, RoundStarted, SearchEvent, SearchFinished, SearchStarted,
)
from workloads.report.search_summary import tok_text
from workloads.search.report import decision_line, round_title
from workloads.search.space import SearchSpace
from workloads.sweep.events import (
    CellFinished, EvalFinished, LaneClosed, LaneEvent, LaneMoved, LanesStarted, LosslessChecked, ServerApplied,
    ServerPhaseChanged, SlotFinished, SlotStarted, SweepEvent, SweepFinished, SweepStarted,
)
from workloads.sweep.lines import first_line, lanes_lines, moved_line


class SearchLines:
    """The lines of a search's event stream; remembers the space, the restarts measured so far (for the
    time a round's restarts will take), each lane's GPUs, and the search's folder once it is known."""

    def __init__(self) -> None:
        self.space: SearchSpace | None = None
        self.expected_restart_s: float | None = None
        self.restart_s: list[float] = []
        self.gpus: dict[int, str] = {}
        self.path: str | None = None

    def _restart_time(self, n: int) -> str:
        each = statistics.median(self.restart_s) if self.restart_s else self.expected_restart_s
        if not n or each is None:
            return ""
        total = n * each
        return f", about {total / 60:.1f} min of restarts" if total >= 120 else f", about {total:.0f} s of restarts"

    def __call__(self, event: SearchEvent) -> list[str]:
        match event:
            case SearchStarted():
                return self._started(event)
            case RoundStarted():
                if self.space is None:
                    return []
                return [round_title(self.space, event.plan) +
                        f" (up to {event.restarts_needed} restart(s){self._restart_time(event.restarts_needed)}; "
                        f"{event.restarts_so_far} so far)"]
            case RoundProgress():
                return self.progress(event.event)
            case RoundFinished():
                return self._round_finished(event)
            case SearchFinished():
                used = event.summary.get("restarts", {}).get("used")
                return [f"search {event.status}: {used} restart(s); folder {event.path}"]
            case LanesStarted():
                self.gpus = {lane.index: lane.visible_devices for lane in event.lanes}
                return lanes_lines(event, "search")
            case LaneClosed():  # a lane's server at the end: stopped, or kept (--keep-server)
                return [f"search: lane {event.lane}: {event.what}"]
            case _:
                assert_never(event)

    def _started(self, event: SearchStarted) -> list[str]:
        self.space, self.expected_restart_s, self.path = event.space, event.expected_restart_s, event.path
        space = event.space
        lines = [f"search: {space.size} configurations ({space.shape}); one pass starts about {space.one_pass}, "
                 f"a full grid {space.size}; start {space.label(event.start)}"]
        if event.replayed:
            lines.append(f"resuming: {event.replayed} round(s) recorded, {event.restarts} restart(s) used")
        return lines + [f"folder {event.path}"]

    def _round_finished(self, event: RoundFinished) -> list[str]:
        if self.space is None:
            return []
        lines = []
        for obs, est in zip(event.observations, event.estimates, strict=True):
            label = self.space.label(obs.point)
            if obs.restart_s is not None and obs.restarted:
                self.restart_s.append(obs.restart_s)
            if obs.failed:
                lines.append(f"    {label}: FAILED (left out of the search): {first_line(obs.failed)}")
            else:
                n = est.n if est is not None else 0
                where = f" (this round on lane {obs.lane}, GPU {','.join(obs.gpus)})" if obs.lane is not None else ""
                lines.append(f"    {label}: {tok_text(est)} over {n} wave(s){where}")
        return lines + [decision_line(self.space, decision) for decision in event.decisions]

    def progress(self, event: SweepEvent, tag: str = "") -> list[str]:
        """A sweep event of the round under way: a line per restart and per server outcome; on lanes
        (--parallel) each line names its lane and GPUs."""
        match event:
            case LanesStarted():
                self.gpus = {lane.index: lane.visible_devices for lane in event.lanes}
                return []
            case LaneMoved():
                return [f"search: {moved_line(event)}"]
            case LaneEvent():
                return self.progress(event.event, f"[lane {event.lane} GPU {self.gpus.get(event.lane, '?')}] ")
            case SlotStarted():
                what = "restarting the server" if event.restart else "server already runs it"
                return [f"  {tag}{event.slot.config}: {what}"]
            case ServerApplied():
                a = event.applied
                if not a.ok:
                    return [f"    {tag}server FAILED: {first_line(a.reason)}"]
                took = f" in {a.restart_s:.1f} s" if a.restart_s is not None else ""
                return [f"    {tag}server ready{took}"] if a.restarted else []
            case (SweepStarted() | ServerPhaseChanged() | CellFinished() | EvalFinished() | LosslessChecked()
                  | SlotFinished() | SweepFinished() | LaneClosed()):
                return []
            case _:
                assert_never(event)

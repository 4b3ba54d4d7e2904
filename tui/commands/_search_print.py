"""The plain-text lines ``ddtune search`` writes to stderr while it runs (the engine prints nothing)."""

from __future__ import annotations

import statistics
import sys

import workloads.search as ev
import workloads.sweep as sw
from tui.commands._sweep_print import moved_line
from workloads.search import SearchSpace, decision_line, round_title, tok_text


class SearchPrinter:
    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.space: SearchSpace | None = None
        self.expected_restart_s: float | None = None
        self.restart_s: list[float] = []
        self.gpus: dict[int, str] = {}

    def _w(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def _restart_time(self, n: int) -> str:
        each = statistics.median(self.restart_s) if self.restart_s else self.expected_restart_s
        if not n or each is None:
            return ""
        total = n * each
        return f", about {total / 60:.1f} min of restarts" if total >= 120 else f", about {total:.0f} s of restarts"

    def __call__(self, event) -> None:
        if isinstance(event, ev.SearchStarted):
            self.space = event.space
            self.expected_restart_s = event.expected_restart_s
            space = event.space
            shape = " x ".join(f"{name} {len(values)}" for name, values in space.axes)
            one_pass = 1 + sum(len(values) - 1 for _, values in space.axes)
            self._w(f"search: {space.size} configurations ({shape}); one pass starts about {one_pass}, "
                    f"a full grid {space.size}; start {space.label(event.start)}")
            if event.replayed:
                self._w(f"resuming: {event.replayed} round(s) recorded, {event.restarts} restart(s) used")
            self._w(f"folder {event.path}")
        elif isinstance(event, ev.RoundStarted) and self.space is not None:
            self._w(round_title(self.space, event.plan) +
                    f" (up to {event.restarts_needed} restart(s){self._restart_time(event.restarts_needed)}; "
                    f"{event.restarts_so_far} so far)")
        elif isinstance(event, ev.RoundFinished) and self.space is not None:
            for obs, est in zip(event.observations, event.estimates, strict=True):
                label = self.space.label(obs.point)
                if obs.restart_s is not None and obs.restarted:
                    self.restart_s.append(obs.restart_s)
                if obs.failed:
                    self._w(f"    {label}: FAILED (left out of the search): {obs.failed.splitlines()[0]}")
                else:
                    n = est.n if est is not None else 0
                    gpus = ",".join(obs.gpus)
                    where = f" (this round on lane {obs.lane}, GPU {gpus})" if obs.lane is not None else ""
                    self._w(f"    {label}: {tok_text(est)} over {n} wave(s){where}")
            for decision in event.decisions:
                self._w(decision_line(self.space, decision))
        elif isinstance(event, ev.SearchFinished):
            used = event.summary.get("restarts", {}).get("used")
            self._w(f"search {event.status}: {used} restart(s); folder {event.path}")

    def progress(self, plan, event) -> None:
        """A sweep event of the round under way: a line per restart and per server outcome; on
        lanes (--parallel) each line names its lane and GPUs."""
        tag = ""
        if isinstance(event, sw.LanesStarted):
            self.gpus = {lane.index: lane.visible_devices for lane in event.lanes}
            return
        if isinstance(event, sw.LaneMoved):
            self._w(f"search: {moved_line(event)}")
            return
        if isinstance(event, sw.LaneEvent):
            tag = f"[lane {event.lane} GPU {self.gpus.get(event.lane, '?')}] "
            event = event.event
        if isinstance(event, sw.SlotStarted):
            what = "restarting the server" if event.restart else "server already runs it"
            self._w(f"  {tag}{event.slot.config}: {what}")
        elif isinstance(event, sw.ServerApplied):
            a = event.applied
            if not a.ok:
                self._w(f"    {tag}server FAILED: {(a.reason or '').splitlines()[0] if a.reason else ''}")
            elif a.restarted:
                self._w(f"    {tag}server ready{f' in {a.restart_s:.1f} s' if a.restart_s is not None else ''}")

    def lane_closed(self, event) -> None:
        """A lane's server at the end of a parallel search: stopped, or kept (--keep-server)."""
        self._w(f"search: lane {event.lane}: {event.what}")

"""The search engine: run the strategy's rounds (workloads/search/strategy.py) until it is done.

Each round goes to a *round runner*, one call for the round's whole list of configurations. The
serial runner here hands the round to the sweep engine (workloads/sweep/engine.py) as a one-repeat sweep
in ``round-NN/``: for each configuration it restarts the server only when its knobs differ from
what runs, waits for readiness, verifies the knobs took effect, warms up and measures one bench
cell (the target context and concurrency, ``waves x concurrency`` requests released in waves). A
runner with lanes on several GPUs can replace it: it takes the same RoundPlan and returns the same
Observations, one per configuration.

Resume: rounds.jsonl holds every finished round with what it measured; the strategy replays them
(the same observations give the same plans, checked round by round) and the search goes on from
the first round not recorded, whose sweep folder keeps the configurations it already measured.

The engine prints nothing: it publishes frozen events (workloads/search/events.py), as the sweep
engine does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from backends.core import UsageError
from backends.core import bounded
from workloads.bench.plan import BenchPlan
from workloads.runs.attempts import begin_attempt, recording_end
from workloads.runs.checks import MAX_TIME, plausible, read_plan
from workloads.search.events import (
    RoundFinished, RoundStarted, SearchEvent, SearchFinished, SearchStarted,
)
from workloads.search.report import summarize
from workloads.search.space import Point, SearchSpace
from workloads.search.store import SearchStore, wave_samples
from workloads.search.strategy import Observation, RoundPlan, Search, SearchOptions
from workloads.sweep.engine import SweepEngine
from workloads.sweep.events import ServerController, SweepEvent
from workloads.sweep.plan import SlotRecord, SweepConfig, SweepPlan, SweepStore

ROUND_KIND = "search-round"


@dataclass(frozen=True)
class Target:
    """What one measurement is: a bench cell at this context and concurrency."""

    context: int = 4096
    concurrency: int = 8
    max_tokens: int = 256
    warmup: int = 1            # unrecorded requests before each cell
    warmup_requests: int = 2   # requests after each restart, before anything is measured
    prompts: str = "story"     # the prompt source (a search written before sources: the story, with ignore_eos)
    ignore_eos: bool = False

    def bench(self, waves: int) -> BenchPlan:
        """The measured cell; a wave is one tok/s sample, so only first turns are sent (no follow-up
        would leave with its wave)."""
        return BenchPlan((self.context,), (self.concurrency,), self.max_tokens, False,
                         waves * self.concurrency, self.warmup, "wave", (self.prompts,), self.ignore_eos,
                         multi_turn="first")

    def to_json(self) -> dict:
        return {"context": self.context, "concurrency": self.concurrency, "max_tokens": self.max_tokens,
                "warmup": self.warmup, "warmup_requests": self.warmup_requests, "prompts": self.prompts,
                "ignore_eos": self.ignore_eos}

    @classmethod
    def from_json(cls, data: dict) -> Target:
        legacy = "prompts" not in data
        return cls(plausible(data["context"], "context", low=0), plausible(data["concurrency"], "concurrency"),
                   plausible(data["max_tokens"], "max_tokens"),
                   plausible(data.get("warmup", 1), "requests", "warmup", 0),
                   plausible(data.get("warmup_requests", 2), "requests", "warmup_requests", 0),
                   str(data.get("prompts", "story")), bool(data.get("ignore_eos", legacy)))


class RoundRunner(Protocol):
    async def measure(self, plan: RoundPlan, space: SearchSpace, folder: Path) -> list[Observation]: ...


class SweepRoundRunner:
    """Measures a round's configurations one after another with the sweep engine."""

    def __init__(self, controller: ServerController, target: Target, *, api_key: str | None = None,
                 on_event: Callable[[RoundPlan, SweepEvent], None] | None = None,
                 expected_restart_s: float | None = None) -> None:
        self.controller = controller
        self.target = target
        self.api_key = api_key
        self.on_event = on_event or (lambda plan, event: None)
        self.expected_restart_s = expected_restart_s

    async def measure(self, plan: RoundPlan, space: SearchSpace, folder: Path) -> list[Observation]:
        configs, sweep, store = round_sweep(plan, space, folder, self.target)
        engine = SweepEngine(sweep, store, self.controller, api_key=self.api_key,
                             on_event=lambda event: self.on_event(plan, event),
                             expected_restart_s=self.expected_restart_s)
        return observations(plan, configs, await engine.run(), store, self.target)


def round_sweep(plan: RoundPlan, space: SearchSpace, folder: Path,
                target: Target) -> tuple[list[SweepConfig], SweepPlan, SweepStore]:
    """A round as a one-repeat sweep in ``folder`` (created, or reopened when the round is resumed):
    its configurations in the plan's order, the sweep plan and its store."""
    configs = [SweepConfig(space.label(a.point), space.knob_values(a.point)) for a in plan.asks]
    sweep = SweepPlan(tuple(configs), target.bench(max(a.waves for a in plan.asks)), 1, None,
                      target.warmup_requests)
    if (folder / "sweep.json").is_file():
        store = SweepStore.open(folder, ROUND_KIND)
        if store.plan().to_json() != sweep.to_json():
            raise UsageError(f"{folder}: this round was planned differently than the search now plans it",
                             hint="start a new search (a different ddtune version planned this one)")
    else:
        store = SweepStore.create(sweep, {"round": plan.to_json()}, folder, ROUND_KIND)
    return configs, sweep, store


def observations(plan: RoundPlan, configs: list[SweepConfig], measured: list[SlotRecord], store: SweepStore,
                 target: Target) -> list[Observation]:
    """One Observation per ask from the round's slot records: per-wave samples, the restart, the
    lane and GPUs that measured it (a parallel round), or why it failed."""
    records = {r.slot.config: r for r in measured}
    out = []
    for ask, config in zip(plan.asks, configs, strict=True):
        rec = records.get(config.name)
        server = rec.server if rec is not None else {}
        restarted = bool(server.get("restarted"))
        restart_s = server.get("restart_s")
        lane = server.get("lane") if isinstance(server.get("lane"), int) else None
        gpus = tuple(str(g) for g in server.get("gpus") or ()) if lane is not None else ()
        if rec is None or rec.status != "done" or not rec.bench_dir:
            reason = (rec.reason if rec is not None else None) or "not measured"
            out.append(Observation(ask.point, (), restarted, restart_s, reason, str(store.path), lane, gpus))
            continue
        samples = wave_samples(rec.bench_dir, target.concurrency)
        failed = None if samples else "no complete wave was measured"
        out.append(Observation(ask.point, tuple(samples), restarted, restart_s, failed, rec.bench_dir, lane, gpus))
    return out


def wall_s(rounds: list[dict]) -> float | None:
    """Seconds the recorded rounds took, end to end, summed over every attempt (None: none timed)."""
    spans = [span for r in rounds if (span := _span(r)) is not None]
    return sum(spans) if spans else None


def _span(record: dict) -> float | None:
    """A round's seconds, when both its times are plausible Unix times (an edited 1e400 is not one)."""
    try:
        return bounded(record.get("finished_at"), 0, MAX_TIME, "finished_at") - \
            bounded(record.get("started_at"), 0, MAX_TIME, "started_at")
    except ValueError:
        return None


class SearchEngine:
    def __init__(self, store: SearchStore, runner: RoundRunner,
                 on_event: Callable[[SearchEvent], None] | None = None,
                 expected_restart_s: float | None = None) -> None:
        doc = store.read()

        def parse() -> tuple[SearchSpace, SearchOptions, Target, Point, Point | None]:
            space = SearchSpace.from_json(doc["space"])
            running = doc.get("running_at_start")
            return (space, SearchOptions.from_json(doc["options"]), Target.from_json(doc["target"]),
                    space.point(doc["start"]), space.point(running) if running is not None else None)

        self.space, self.options, self.target, self.start, self.running = read_plan(
            str(store.manifest), parse, "search", "give the folder a search wrote (its --out), or start a new search")
        self.store = store
        self.runner = runner
        self.emit = on_event or (lambda e: None)
        self.expected_restart_s = expected_restart_s
        self.search = Search(self.space, self.options, self.start, self.running)
        self.summary: dict = {}  # the JSON summary, once the run ended (however it ended)

    def _replay(self) -> int:
        rounds = self.store.rounds()
        for i, record in enumerate(rounds):
            plan = self.search.propose()
            if plan is None or plan.to_json() != record.get("plan"):
                raise UsageError(f"{self.store.rounds_file}: round {i + 1} differs from what the search plans now",
                                 hint="start a new search (a different ddtune version planned this one)")
            try:
                observations = [Observation.from_json(o, self.space) for o in record["observations"]]
            except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
                raise UsageError(f"{self.store.rounds_file}: round {i + 1}: unreadable ({exc})",
                                 hint="start a new search") from None
            self.search.observe(observations)
        return len(rounds)

    async def run(self) -> dict:
        replayed = self._replay()
        manifest = self.store.read()
        begin_attempt(manifest)
        manifest["resumed_at"] = manifest.get("resumed_at", []) + ([time.time()] if replayed else [])
        self.store.write(manifest)
        self.emit(SearchStarted(str(self.store.path), self.space, self.start, replayed, self.search.restarts,
                                self.expected_restart_s))
        with recording_end(self._record_end):
            while (plan := self.search.propose()) is not None:
                self.emit(RoundStarted(plan, self.search.restarts_needed(plan), self.search.restarts))
                began = time.time()
                found = await self.runner.measure(plan, self.space, self.store.round_dir(plan.number))
                self.store.append_round({"plan": plan.to_json(), "observations": [o.to_json() for o in found],
                                         "started_at": began, "finished_at": time.time()})
                seen = len(self.search.decisions)
                self.search.observe(found)
                self.emit(RoundFinished(plan, tuple(found),
                                        tuple(self.search.estimate(o.point) for o in found),
                                        tuple(self.search.decisions[seen:])))
        return self.summary

    def _record_end(self, status: str) -> None:
        """However the search ended: search.json says how, the summary is written when it finished."""
        self.summary = summarize(self.search, self.target, str(self.store.path), status, wall_s(self.store.rounds()))
        if status == "done":
            self.store.write_summary(self.summary)
        self.store.update(status=status, finished_at=time.time(), restarts=self.search.restarts,
                          rounds=len(self.search.rounds))
        self.emit(SearchFinished(str(self.store.path), status, self.summary))

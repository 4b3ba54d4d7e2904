"""What a bench cell sends: its jobs (one prompt record each, its follow-up turns), made from the
run's prompt sets, and how the server's prefix cache is kept from serving one from another.

A cell of ``n`` requests takes the set's records in order from the first, so every cell of a set
measures the same prompts (cells compare); a set with fewer records than that repeats them, and
the cell says how many were distinct (``n_distinct``). At a context above 0 each job's first turn is
built to that many tokens (workloads/prompts/context.py), every one beginning with a unit no other
prompt of the run began with while the material has one left. A job's ``front`` says what its first
tokens are; a cell whose fronts were sent before (by an earlier cell, its own warmup, a repeat
within the set, or to count tokens) has the cache flushed (``/flush_cache``) right before it is
measured: ``prefix_cache`` is then ``flushed``, ``distinct`` when no flush was needed, and ``shared``
when the server refused the flush (it was busy: another client's traffic).
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.core import UsageError
from workloads.bench.plan import BenchPlan, CellKey
from workloads.grading.problems import Problem
from workloads.prompts.context import BuiltPrompt, ContextBuilder, ContextError, as_is
from workloads.prompts.counting import ServerCounter
from workloads.prompts.records import PromptSet


@dataclass(frozen=True)
class Job:
    prompt: BuiltPrompt                 # the first turn, as sent
    followups: tuple[str, ...]          # user turns sent after the live reply ("live"), in order
    max_tokens: int
    problem: Problem | None = None      # a graded set's problem

    @property
    def front(self) -> str:
        return self.prompt.front


@dataclass(frozen=True)
class CellJobs:
    warmup: list[Job]
    jobs: list[Job]
    n_distinct: int
    material: str | None


def multi_turn_of(jobs: list[Job], plan: BenchPlan) -> list[str]:
    """How the cell's conversations were sent: ``recorded history`` (earlier turns as the source
    recorded them), ``live reply`` (follow-ups after the model's own answer), ``first turn only``."""
    out = []
    if any(j.prompt.record.history for j in jobs):
        out.append("recorded history")
    if any(j.prompt.record.followups for j in jobs):
        out.append("live reply" if plan.multi_turn == "live" else "first turn only")
    return out


class Traffic:
    def __init__(self, client, plan: BenchPlan, sets: dict[str, PromptSet], problems: dict[str, Problem],
                 resumed: bool = False) -> None:
        self.client = client
        self.plan = plan
        self.sets = sets
        self.problems = problems
        self.counter = ServerCounter(client)
        self.builders = {name: ContextBuilder(s, self.counter) for name, s in sets.items()}
        self._front = 0
        self._sent: set[str] = set()       # fronts the server has seen this run
        self._unknown = resumed            # a resumed run: what the cache holds is not known

    async def _job(self, prompts: PromptSet, index: int, context: int) -> Job:
        record = prompts.records[index % len(prompts.records)]
        if context > 0:
            self._front += 1
            try:
                built = await self.builders[prompts.name].build(record, context, self._front)
            except ContextError as exc:
                raise UsageError(f"--contexts {context} with --prompts {prompts.name}: {exc}",
                                 hint="ask for a smaller context, or prompts with more text of their own") from None
        else:
            built = as_is(record)
        followups = record.followups if self.plan.multi_turn == "live" else ()
        problem = self.problems.get(record.problem) if record.problem else None
        return Job(built, followups, record.max_tokens or self.plan.max_tokens, problem)

    async def cell(self, key: CellKey, total: int, warmup: int) -> CellJobs:
        prompts = self.sets[key.prompts]
        size = len(prompts.records)
        jobs = [await self._job(prompts, i, key.context) for i in range(total)]
        # the warmup takes the set's last records (the cell's own when the set is small)
        warm = [await self._job(prompts, size - 1 - i, key.context) for i in range(warmup)]
        material = next((j.prompt.material for j in jobs if j.prompt.material), None)
        return CellJobs(warm, jobs, min(total, size), material)

    def sent(self, jobs: list[Job]) -> None:
        """These jobs' fronts reached the server (a warmup, a measured cell)."""
        self._sent.update(j.front for j in jobs)

    async def settle_cache(self, jobs: list[Job]) -> str:
        """Before a cell is measured: flush the prefix cache if it may hold any of ``jobs``' fronts."""
        fronts = [j.front for j in jobs]
        seen = self._unknown or self.counter.probed or bool(self._sent.intersection(fronts))
        self.counter.probed = False
        if not seen:
            return "distinct"
        if await self.client.flush_cache():
            self._sent.clear()
            self._unknown = False
            return "flushed"
        return "shared"

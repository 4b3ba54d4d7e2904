"""One ``ddtune bench`` invocation: open or resume the run, record provenance, run the matrix."""

from __future__ import annotations

import time

from workloads.bench.matrix import BenchRunner, ProgressCallback
from workloads.bench.plan import BenchPlan
from workloads.client.stream import StreamingClient
from workloads.grading.problems import Problem, load_problems
from workloads.prompts.records import PromptSet
from workloads.prompts.sources import load_source
from workloads.runs.checks import read_plan
from workloads.runs.provenance import host_provenance, server_provenance
from workloads.runs.store import RunStore


def load_sets(plan: BenchPlan) -> tuple[dict[str, PromptSet], tuple[Problem, ...]]:
    """The plan's prompt sets, read and checked (UsageError naming a bad one), and the coding problems
    when a set is graded."""
    sets = {name: load_source(name) for name in plan.sources}
    return sets, load_problems() if any(s.graded for s in sets.values()) else ()


async def bench_run(url: str, plan: BenchPlan, *, api_key: str | None = None, resume: str | None = None,
                    progress: ProgressCallback | None = None, log_path: str | None = None,
                    sets: dict[str, PromptSet] | None = None, gpu_sampler=None) -> dict:
    """Runs (or continues) a bench and returns ``{"run": run.json, "cells": [...]}``."""
    store = RunStore.open_resume(resume, "bench") if resume else None
    if store is not None:
        run = store.read_run()
        plan = read_plan(f"{store.run_file} plan", lambda: BenchPlan.from_json(run["plan"]))
        sets = None
    if sets is None or set(sets) != set(plan.sources):
        sets, problems = load_sets(plan)
    else:
        problems = load_problems() if any(s.graded for s in sets.values()) else ()
    concurrency = max(plan.concurrencies)
    async with StreamingClient(url, api_key=api_key, concurrency=concurrency) as client:
        server = await server_provenance(client)
        if server["server_info"] is None:
            await client.get_json("/v1/models")  # raises a clear ServerError when nothing answers
        if store is None:
            store = RunStore.create("bench", {"plan": plan.to_json(),
                                              "prompt_sets": [s.describe() for s in sets.values()],
                                              "server": server, "host": host_provenance(),
                                              "started_at": time.time(), "finished_at": None})
        else:
            store.resume(server_on_resume=server)
        runner = BenchRunner(client, plan, store, sets, problems, progress, log_path=log_path, gpu_sampler=gpu_sampler)
        cells, run = await run_recorded(runner, store)
    run["dir"] = str(store.path)
    return {"run": run, "cells": cells}


async def run_recorded(runner: BenchRunner, store) -> tuple[list, dict]:
    """Run the matrix and record how it ended in run.json: done, interrupted (resumable) or failed."""
    try:
        cells = await runner.run()
    except BaseException as exc:
        store.end_run(exc)
        raise
    store.close()
    return cells, store.update_run(status="done", finished_at=time.time(), cells=len(cells))

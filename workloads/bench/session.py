"""One ``ddtune bench`` invocation: open or resume the run, record provenance, run the matrix."""

from __future__ import annotations

import time

from workloads.bench.matrix import BenchPlan, BenchRunner, ProgressCallback
from workloads.client.stream import StreamingClient
from workloads.grading.problems import load_problems
from workloads.runs.checks import read_plan
from workloads.runs.provenance import host_provenance, server_provenance
from workloads.runs.store import RunStore


async def run_bench(url: str, plan: BenchPlan, *, api_key: str | None = None, resume: str | None = None,
                    progress: ProgressCallback | None = None, log_path: str | None = None) -> dict:
    """Runs (or continues) a bench and returns ``{"run": run.json, "cells": [...]}``."""
    store = RunStore.open_resume(resume, "bench") if resume else None
    if store is not None:
        run = store.read_run()
        plan = read_plan(f"{store.run_file} plan", lambda: BenchPlan.from_json(run["plan"]))
    concurrency = max(plan.concurrencies)
    async with StreamingClient(url, api_key=api_key, concurrency=concurrency) as client:
        server = await server_provenance(client)
        if server["server_info"] is None:
            await client.get_json("/v1/models")  # raises a clear ServerError when nothing answers
        if store is None:
            store = RunStore.create("bench", {"plan": plan.to_json(), "server": server, "host": host_provenance(),
                                              "started_at": time.time(), "finished_at": None})
        else:
            store.resume(server_on_resume=server)
        problems = load_problems() if plan.coding else ()
        runner = BenchRunner(client, plan, store, problems, progress, log_path=log_path)
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

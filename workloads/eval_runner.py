"""``ddtune eval`` against a server: ask every problem, save every raw response, grade each answer."""

from __future__ import annotations

import asyncio
import time
from typing import Callable

from backends.errors import ServerError
from workloads.client import RequestResult, StreamingClient
from workloads.evaluate import Grade, RawResponse, grade_async, summarize
from workloads.problems import Problem, load_problems, select_problems
from workloads.provenance import host_provenance, server_provenance
from workloads.results import RunStore

EvalProgress = Callable[[int, int, Grade], None]


async def run_eval(url: str, *, api_key: str | None = None, problem_ids: list[str] | None = None,
                   max_tokens: int = 4096, concurrency: int = 4, progress: EvalProgress | None = None,
                   grade_parallel: int = 2) -> dict:
    """Returns ``{"results", "summary", "run_dir"}``; results in problem order."""
    problems = select_problems(load_problems(), problem_ids)
    async with StreamingClient(url, api_key=api_key, concurrency=concurrency) as client:
        server = await server_provenance(client)
        if server["server_info"] is None:
            await client.get_json("/v1/models")
        store = RunStore.create("eval", {"plan": {"problems": [p.id for p in problems], "max_tokens": max_tokens,
                                                  "concurrency": concurrency},
                                         "server": server, "host": host_provenance(), "started_at": time.time(),
                                         "finished_at": None})
        gate = asyncio.Semaphore(grade_parallel)
        grades: dict[int, Grade] = {}
        queue = list(enumerate(problems))[::-1]
        lost: list[RequestResult] = []

        async def ask(index: int, problem: Problem) -> None:
            result = await client.chat([{"role": "user", "content": problem.chat_prompt()}], max_tokens=max_tokens)
            store.append_response({"kind": "eval", "problem": problem.id, **result.raw()})
            if not result.ok:
                if result.unreachable or "connection" in (result.error or ""):
                    lost.append(result)
                grade = Grade(problem.id, "error", f"request failed: {result.error}")
            else:
                raw = RawResponse(problem.id, result.content, result.reasoning_content, result.finish_reason)
                grade = await grade_async(problem, raw, gate=gate)
            grades[index] = grade
            if progress:
                progress(len(grades), len(problems), grade)

        async def worker() -> None:
            while queue and not lost:
                await ask(*queue.pop())

        try:
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        finally:
            store.close()
        ordered = [grades[i] for i in sorted(grades)]
        summary = summarize(ordered)
        if lost:
            store.update_run(status="failed", error=lost[0].error, finished_at=time.time(), summary=summary)
            raise ServerError(f"the server at {url} stopped answering: {lost[0].error}",
                              hint=f"{len(ordered)} answer(s) were saved in {store.path}/responses.jsonl; "
                                   f"regrade them with 'ddtune eval --regrade'")
        store.update_run(status="done", finished_at=time.time(), summary=summary,
                         results=[g.to_json() for g in ordered])
    return {"results": [g.to_json() for g in ordered], "summary": summary, "run_dir": str(store.path)}

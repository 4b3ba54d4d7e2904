"""``ddtune eval`` against a server: ask every problem, save every raw response, grade each answer.

Each graded problem is appended to results.jsonl the moment its verdict is known, so a killed eval
keeps what it graded and ``--resume`` asks only the problems without a kept result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from backends.core import warn
from backends.core import ServerError, UsageError
from workloads.client.result import RequestResult
from workloads.client.stream import StreamingClient
from workloads.grading.evaluate import Grade, RawResponse, grade_async, summarize
from workloads.grading.problems import Problem, load_problems, select_problems
from workloads.runs.provenance import host_provenance, server_provenance
from workloads.runs.checks import plausible, read_plan, usable
from workloads.runs.checks import result as check_result
from workloads.runs.store import RunStore

EvalProgress = Callable[[int, int, Grade], None]


def _resume_plan(store: RunStore) -> tuple[list[str], int, int]:
    """(problem ids, max_tokens, concurrency) of the run being resumed, each checked plausible."""
    run = store.read_run()
    if isinstance(run, dict) and "attempts" not in run:
        raise UsageError(f"--resume: {store.path} was written by an older ddtune that kept no per-problem "
                         "results", hint="start a new eval, or regrade its answers with 'ddtune eval --regrade'")

    def parse() -> tuple[list[str], int, int]:
        plan = run["plan"]
        return ([str(p) for p in plan["problems"]], plausible(plan["max_tokens"], "max_tokens"),
                plausible(plan["concurrency"], "concurrency"))

    return read_plan(f"--resume: {store.run_file} plan", parse)


def _grade_of(record: dict) -> Grade:
    return Grade(str(record.get("problem")), str(record.get("verdict")), str(record.get("detail") or ""))


async def run_eval(url: str, *, api_key: str | None = None, problem_ids: list[str] | None = None,
                   max_tokens: int = 4096, concurrency: int = 4, progress: EvalProgress | None = None,
                   grade_parallel: int = 2, root: Path | None = None, resume: str | None = None) -> dict:
    """Returns ``{"results", "summary", "run_dir"}``; results in problem order. ``root``: where the run
    directory goes (default: state_dir()/runs). ``resume``: a run directory (or "latest") to continue
    with its own plan."""
    store = RunStore.open_resume(resume, "eval", root) if resume else None
    if store is not None:
        problem_ids, max_tokens, concurrency = _resume_plan(store)
    problems = tuple({p.id: p for p in select_problems(load_problems(), problem_ids)}.values())
    async with StreamingClient(url, api_key=api_key, concurrency=concurrency) as client:
        server = await server_provenance(client)
        if server["server_info"] is None:
            await client.get_json("/v1/models")
        if store is None:
            store = RunStore.create("eval", {"plan": {"problems": [p.id for p in problems], "max_tokens": max_tokens,
                                                      "concurrency": concurrency},
                                             "server": server, "host": host_provenance(), "started_at": time.time(),
                                             "finished_at": None}, root=root)
        else:
            store.resume(server_on_resume=server)
        try:
            kept, lost = await _ask_missing(client, store, problems, max_tokens, concurrency, progress, grade_parallel)
        except BaseException as exc:
            store.end_run(exc)
            raise
        store.close()
        ordered = [_grade_of(kept[p.id]) for p in problems if p.id in kept]
        summary = summarize(ordered)
        if lost:
            store.update_run(status="failed", error=lost[0].error, finished_at=time.time(), summary=summary)
            raise ServerError(f"the server at {url} stopped answering: {lost[0].error}",
                              hint=f"{len(ordered)} graded answer(s) are kept in {store.path}; start the server "
                                   f"again and run 'ddtune eval --resume {store.path}'")
        store.update_run(status="done", finished_at=time.time(), summary=summary,
                         results=[g.to_json() for g in ordered])
    return {"results": [g.to_json() for g in ordered], "summary": summary, "run_dir": str(store.path)}


async def _ask_missing(client: StreamingClient, store: RunStore, problems: tuple[Problem, ...], max_tokens: int,
                       concurrency: int, progress: EvalProgress | None,
                       grade_parallel: int) -> tuple[dict[str, dict], list[RequestResult]]:
    """Ask every problem without a kept result; returns the kept results by problem id, and the
    requests lost to an unreachable server (those problems stay unanswered: --resume asks them)."""
    # a result a resume cannot trust (an edited or absurd line) is asked and graded again
    kept = {r["problem"]: r for r in usable(store.results(), check_result, str(store.results_file), warn,
                                            "those problems are asked again")}
    queue = [p for p in problems if p.id not in kept][::-1]
    gate = asyncio.Semaphore(grade_parallel)
    lost: list[RequestResult] = []

    async def ask(problem: Problem) -> None:
        result = await client.chat([{"role": "user", "content": problem.chat_prompt()}], max_tokens=max_tokens)
        store.append_response({"kind": "eval", "problem": problem.id, **result.raw()})
        if not result.ok and (result.unreachable or "connection" in (result.error or "")):
            lost.append(result)
            return
        if not result.ok:
            grade = Grade(problem.id, "error", f"request failed: {result.error}")
        else:
            raw = RawResponse(problem.id, result.content, result.reasoning_content, result.finish_reason)
            grade = await grade_async(problem, raw, gate=gate)
        store.append_result(grade.to_json())
        kept[problem.id] = grade.to_json()
        if progress:
            progress(len(kept), len(problems), grade)

    async def worker() -> None:
        while queue and not lost:
            await ask(queue.pop())

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return kept, lost

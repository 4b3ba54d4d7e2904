"""The benchmark matrix: prompts x context x concurrency (x request rate), one durable cell at a time.

Each cell makes its jobs (workloads/bench/traffic.py: the set's prompts, built to the context with
real text), runs ``warmup`` unrecorded jobs, flushes the server's prefix cache where it may hold the
cell's prompts, then sends its jobs (workloads/bench/send.py: in waves, staggered, or at a request
rate) and appends its record to cells.jsonl the moment it ends (workloads/bench/cells.py), with how
its traffic went: the share that hit max_tokens, degenerate answers (left out of acceptance unless
``include_degenerate``), whether someone else's traffic shared the server (``contended``) and the
local GPUs' utilisation. Requests stop where the model stops unless ``ignore_eos``. A graded set's
answers (the coding problems) are graded in the sandbox, off the event loop.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from backends.core import warn
from backends.core import ServerError, ServerUnreachable
from backends.logs import decode_since, log_end
from workloads.bench.arrivals import arrival_offsets, cell_seed
from workloads.bench.cells import cell_stats, traffic_stats
from workloads.bench.plan import BenchPlan, CellKey
from workloads.bench.quality import degenerate
from workloads.bench.send import Sender
from workloads.bench.traffic import CellJobs, Job, Traffic, multi_turn_of
from workloads.bench.watch import ContentionWatch, GpuWatch, InFlight, is_local
from workloads.client.result import RequestResult
from workloads.client.stream import StreamingClient
from workloads.grading.evaluate import Grade, RawResponse, grade_async
from workloads.grading.problems import Problem
from workloads.prompts.records import PromptSet
from workloads.runs.checks import cell as check_cell
from workloads.runs.checks import usable
from workloads.runs.provenance import server_info_of, speculative_from_info
from workloads.runs.store import RunStore


@dataclass(frozen=True)
class BenchProgress:
    cells_done: int
    cells_total: int
    context: int
    concurrency: int
    requests_done: int
    requests_total: int
    phase: str  # "sizing", "warmup", "running", "done"
    eta_s: float | None = None  # seconds left of the whole run (BenchEta); None before a cell finished
    prompts: str = ""           # the cell's prompt source
    rate: float | None = None   # its request rate (None: closed loop)


ProgressCallback = Callable[[BenchProgress], None]


class BenchEta:
    """Time left of a bench run, measured by this run, never guessed.

    A cell keeps ``concurrency`` requests in flight until ``requests`` finished: about
    ceil(requests / concurrency) rounds of one request. The seconds per round come from the cells
    this run finished (sizing and warmup included), so there is no ETA before the first one ends."""

    def __init__(self, plan: BenchPlan) -> None:
        self.plan = plan
        self.rounds_done = 0
        self.seconds = 0.0

    def rounds(self, concurrency: int) -> int:
        return math.ceil(self.plan.requests_for(concurrency) / concurrency)

    def cell_finished(self, concurrency: int, seconds: float) -> None:
        self.rounds_done += self.rounds(concurrency)
        self.seconds += max(0.0, seconds)

    def eta(self, cells_left: list, current: tuple[int, float] | None = None) -> float | None:
        """Seconds for ``cells_left`` (context, concurrency) plus, with ``current`` (concurrency,
        fraction still to run), what is left of the cell under way."""
        if not self.rounds_done:
            return None
        rounds: float = sum(self.rounds(key[1]) for key in cells_left)
        if current is not None:
            rounds += self.rounds(current[0]) * min(1.0, max(0.0, current[1]))
        return round(rounds * self.seconds / self.rounds_done, 1)


class BenchRunner:
    def __init__(self, client: StreamingClient, plan: BenchPlan, store: RunStore, sets: dict[str, PromptSet],
                 problems: tuple[Problem, ...] = (), progress: ProgressCallback | None = None,
                 grade_parallel: int = 2, log_path: str | None = None, gpu_sampler=None) -> None:
        missing = [s for s in plan.sources if s not in sets]
        if missing:
            raise ValueError(f"no prompt set loaded for {', '.join(missing)}")
        self.client = client
        self.plan = plan
        self.store = store
        self.sets = sets
        self.progress = progress or (lambda p: None)
        self._gate = asyncio.Semaphore(grade_parallel)
        self.eta = BenchEta(plan)
        self.log_path = log_path  # the server's log, read by offset over each cell (acceptance's last source)
        if gpu_sampler is None and is_local(client.base_url):
            from backends.machine import GpuSampler

            gpu_sampler = GpuSampler()  # NVML: each cell's GPU utilisation and memory, where there is a driver
        self.gpu_sampler = gpu_sampler if is_local(client.base_url) else None
        self._left: list[CellKey] = []  # the cells still to run after the one under way
        self.traffic = Traffic(client, plan, sets, {p.id: p for p in problems},
                               resumed=bool(store.read_run().get("resumed_at")))

    async def run(self) -> list[dict]:
        """Run every cell not already in cells.jsonl; returns all cells (old and new) in plan order."""
        if self.client.speculative is None:
            # acceptance only from a speculative server: what /server_info said when the run (re)started
            run = self.store.read_run()
            server = run.get("server_on_resume") or run.get("server") or {}
            self.client.speculative = speculative_from_info(server.get("server_info") if isinstance(server, dict)
                                                            else None)
        first = self.plan.sources[0]
        # a cell a resume cannot trust (an edited or absurd line) is measured again, never passed on
        kept = usable(self.store.cells(), check_cell, str(self.store.cells_file), warn,
                      "those cells are measured again")
        done = {CellKey.of(c, first): c for c in kept}
        cells = self.plan.cells()
        for key in cells:
            if key in done:
                continue
            self._left = [k for k in cells if k not in done and k != key]
            t0 = time.perf_counter()
            cell = await self._run_cell(key, len(done), len(cells))
            self.eta.cell_finished(key.concurrency, time.perf_counter() - t0)
            self.store.append_cell(cell)
            done[key] = cell
            total = self.plan.requests_for(key.concurrency)
            self.progress(BenchProgress(len(done) - 1, len(cells), key.context, key.concurrency, total, total,
                                        "done", self.eta.eta(self._left), key.prompts, key.rate))
        return [done[key] for key in cells if key in done]

    async def _run_cell(self, key: CellKey, cells_done: int, cells_total: int) -> dict:
        conc = key.concurrency
        total = self.plan.requests_for(conc)
        report = lambda n, phase: self.progress(BenchProgress(  # noqa: E731
            cells_done, cells_total, key.context, conc, n, total, phase,
            self.eta.eta(self._left, (conc, 1 - n / total)), key.prompts, key.rate))
        report(0, "sizing")
        try:
            made = await self.traffic.cell(key, total, self.plan.warmup)
        except ServerError as exc:  # sizing asks the server itself: an unusable answer ends the run here
            what = "stopped answering during" if isinstance(exc, ServerUnreachable) else "could not size the prompts of"
            raise self._lost(key, cells_done, exc.message, what) from None
        sender = Sender(self.client, self.plan.ignore_eos, InFlight())
        if made.warmup:
            report(0, "warmup")
            await sender.staggered(made.warmup, min(conc, len(made.warmup)), None)
            self.traffic.sent(made.warmup)
        prefix = await self.traffic.settle_cache(made.jobs)
        report(0, "running")
        return await self._measure(key, made, sender, prefix, report)

    async def _measure(self, key: CellKey, made: CellJobs, sender: Sender, prefix: str, report) -> dict:
        speculative = self.client.speculative is not False
        before = await self.client.spec_counters() if speculative else None  # the cell's edges on /metrics
        offset = log_end(self.log_path) if speculative else None  # ... and in the server log
        watch = ContentionWatch(self.client, sender.flight)
        gpus = GpuWatch(self.gpu_sampler) if self.gpu_sampler is not None else None
        await watch.start()
        if gpus is not None:
            await gpus.start()
        started_at = time.time()
        t0 = time.perf_counter()
        results: list[RequestResult] = []
        caps: list[int] = []
        loops: dict[int, str] = {}
        grades: list[asyncio.Task] = []

        def finished(job: Job, turn: int, result: RequestResult, scheduled: float | None) -> None:
            why = degenerate(result.content + (result.reasoning_content or "")) if result.ok else None
            if why is not None:
                loops[len(results)] = why
            results.append(result)
            caps.append(job.max_tokens)
            record = {"kind": "bench", "context": key.context, "concurrency": key.concurrency,
                      "prompts": key.prompts, "request_rate": key.rate, "record": job.prompt.record.id,
                      "turn": turn, "problem": job.problem.id if job.problem else None,
                      "degenerate": why, **result.raw()}
            if scheduled is not None:
                record["scheduled_s"] = scheduled
            self.store.append_response(record)
            if job.problem is not None and turn == 0:
                grades.append(asyncio.ensure_future(self._grade(job.problem, result)))
            report(len(results), "running")

        if key.rate is not None:
            offsets = arrival_offsets(len(made.jobs), key.rate, self.plan.burstiness, cell_seed(self.plan.seed, key))
            await sender.at_rate(made.jobs, key.concurrency, offsets, finished)
        elif self.plan.release == "wave":
            await sender.waves(made.jobs, key.concurrency, finished)
        else:
            await sender.staggered(made.jobs, key.concurrency, finished)
        duration = time.perf_counter() - t0
        self.traffic.sent(made.jobs)
        honest = await watch.stop()
        gpu = await gpus.stop() if gpus is not None else None
        after = await self.client.spec_counters() if before is not None else None
        decode = decode_since(self.log_path, offset)[0] if offset is not None and after is None else None
        graded = list(await asyncio.gather(*grades)) if any(j.problem for j in made.jobs) else None
        await self._check_alive(results, key, made)
        left_out = frozenset() if self.plan.include_degenerate else frozenset(loops)
        cell = cell_stats(key.context, key.concurrency, results, duration, graded, started_at, (before, after),
                          decode, left_out)
        if cell["acceptance"] is not None and left_out and cell["acceptance"].get("source") == "request":
            cell["acceptance"]["left_out_degenerate"] = len(left_out)
        return {**cell, "prompts": key.prompts, "request_rate": key.rate, **self._traffic_fields(key, made, prefix),
                **traffic_stats(results, duration, caps, loops, self.plan.slo), **honest, "gpu": gpu}

    def _traffic_fields(self, key: CellKey, made: CellJobs, prefix: str) -> dict:
        out: dict = {"ignore_eos": self.plan.ignore_eos, "context_from": made.material, "prefix_cache": prefix,
                     "multi_turn": multi_turn_of(made.jobs, self.plan)}
        if key.rate is not None:
            out["burstiness"] = self.plan.burstiness
        if made.n_distinct < len(made.jobs):
            out["n_distinct"] = made.n_distinct
        return out

    async def _grade(self, problem: Problem, result: RequestResult) -> Grade:
        if not result.ok:
            return Grade(problem.id, "error", f"request failed: {result.error}")
        raw = RawResponse(problem.id, result.content, result.reasoning_content, result.finish_reason)
        return await grade_async(problem, raw, gate=self._gate)

    async def _check_alive(self, results: list[RequestResult], key: CellKey, made: CellJobs) -> None:
        failed = [r for r in results if not r.ok]
        if not failed or (len(failed) < len(results) and not any(r.unreachable for r in failed)):
            return
        try:
            await server_info_of(self.client)
        except ServerError:
            raise self._lost(key, len(self.store.cells()), failed[0].error or "") from None

    def _lost(self, key: CellKey, cells_done: int, why: str, what: str = "stopped answering during") -> ServerError:
        return ServerError(
            f"the server at {self.client.base_url} {what} cell {key.label()}: {why}",
            hint=f"{cells_done} finished cell(s) are kept in {self.store.path}; "
                 f"start the server again and run 'ddtune bench --resume {self.store.path}'")

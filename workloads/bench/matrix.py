"""The benchmark matrix: context lengths x concurrency, one durable cell at a time.

Each cell sizes its prompts to the context (``PromptSizer``), runs ``warmup`` unrecorded requests,
then sends its ``requests`` ``concurrency`` at a time and appends its statistics to cells.jsonl the
moment it ends. ``release`` says how: ``wave`` (the default) sends each wave of ``concurrency``
requests at once (connections opened and request bytes built first, then an asyncio barrier,
``transport.WaveRelease``, lets them all go) and starts the next wave when this one has finished,
so the server admits a wave together; ``staggered`` keeps ``concurrency`` requests in flight, each
slot sending its next request as soon as its last one ends, as ``sglang.bench_serving
--max-concurrency`` does (use it to reproduce bench_serving's TTFT and ITL: benchmarks/crosscheck.md).
With ``coding`` the prompts are the coding problems (padded to the context)
and every answer is graded in the sandbox, off the event loop.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from backends.core.datafile import warn
from backends.core.errors import ServerError
from backends.logs.events import DecodeBatch
from backends.logs.span import decode_since, log_end, weighted_accept
from backends.logs.acceptance import SpecCounters, counter_acceptance
from workloads.client.result import RequestResult
from workloads.client.stream import StreamingClient
from workloads.grading.evaluate import Grade, RawResponse, grade_async, summarize
from workloads.stats.metrics import distribution, percentile
from workloads.grading.problems import Problem
from workloads.bench.prompts import PLAIN_TASK, PromptSizer, SizedPrompt
from workloads.runs.provenance import server_info_of, speculative_from_info
from workloads.runs.checks import cell as check_cell
from workloads.runs.checks import plausible, usable
from workloads.runs.store import RunStore
from workloads.client.transport import WaveRelease


RELEASES = ("wave", "staggered")


@dataclass(frozen=True)
class BenchPlan:
    contexts: tuple[int, ...]
    concurrencies: tuple[int, ...]
    max_tokens: int = 512
    coding: bool = False
    requests_per_cell: int | None = None
    warmup: int = 1
    release: str = "wave"  # "wave" or "staggered" (see the module docstring)

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise ValueError(f"release must be one of {', '.join(RELEASES)}, got {self.release!r}")

    def cells(self) -> list[tuple[int, int]]:
        return [(ctx, conc) for ctx in self.contexts for conc in self.concurrencies]

    def requests_for(self, concurrency: int) -> int:
        return self.requests_per_cell or max(2 * concurrency, 8)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> BenchPlan:
        # a plan written before waves existed was run staggered: its resume keeps that
        requests = data.get("requests_per_cell")
        return cls(tuple(plausible(c, "context") for c in data["contexts"]) or _none("contexts"),
                   tuple(plausible(c, "concurrency") for c in data["concurrencies"]) or _none("concurrencies"),
                   plausible(data["max_tokens"], "max_tokens"), bool(data["coding"]),
                   None if requests is None else plausible(requests, "requests", "requests_per_cell"),
                   plausible(data.get("warmup", 1), "requests", "warmup", low=0), str(data.get("release", "staggered")))


def _none(what: str) -> tuple[int, ...]:
    raise ValueError(f"{what}: none")


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

    def eta(self, cells_left: list[tuple[int, int]], current: tuple[int, float] | None = None) -> float | None:
        """Seconds for ``cells_left`` (context, concurrency) plus, with ``current`` (concurrency,
        fraction still to run), what is left of the cell under way."""
        if not self.rounds_done:
            return None
        rounds: float = sum(self.rounds(conc) for _, conc in cells_left)
        if current is not None:
            rounds += self.rounds(current[0]) * min(1.0, max(0.0, current[1]))
        return round(rounds * self.seconds / self.rounds_done, 1)


def cell_stats(context: int, concurrency: int, results: list[RequestResult], duration_s: float,
               grades: list[Grade] | None, started_at: float,
               counters: tuple[SpecCounters | None, SpecCounters | None] = (None, None),
               decode: list[DecodeBatch] | None = None) -> dict:
    """One cell's JSON record (docs/results-schema.md); ``decode``: the server log's decode lines
    the cell covers (``backends.logs.span``), for acceptance where neither requests nor counters have it."""
    ok = [r for r in results if r.ok]
    tokens = sum(r.output_tokens for r in ok)
    itl = [x for r in ok for x in r.itl_s]
    itl_token = [x for r in ok for x in r.itl_token_s]
    prompt = [r.prompt_tokens for r in results if r.prompt_tokens is not None]
    ms = lambda d: {k: (v * 1000 if isinstance(v, float) and k != "count" else v) for k, v in d.to_json().items()}
    errors = [r.error for r in results if not r.ok]
    acceptance = acceptance_stats(ok, counters, decode)
    return {
        "context": context,
        "concurrency": concurrency,
        "started_at": started_at,
        "duration_s": duration_s,
        "requests": len(results),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "prompt_tokens": {"target": context, "min": min(prompt) if prompt else None,
                          "mean": sum(prompt) / len(prompt) if prompt else None,
                          "max": max(prompt) if prompt else None},
        "output_tokens": tokens,
        "output_tok_s": tokens / duration_s if duration_s > 0 else None,
        "per_stream_tok_s": distribution([r.decode_tok_s for r in ok if r.decode_tok_s is not None]).to_json(),
        "ttft_ms": ms(distribution([r.ttft_s for r in ok if r.ttft_s is not None])),
        "itl_ms": ms(distribution(itl)),
        "itl_token_ms": ms(distribution(itl_token)),
        "e2e_ms": ms(distribution([r.e2e_s for r in ok])),
        "acceptance": acceptance,
        "alarms": cell_alarms(acceptance),
        "finish_reasons": _count(r.finish_reason or "none" for r in ok),
        "verdicts": summarize(grades) if grades is not None else None,
        "dropped": list(dict.fromkeys(note for r in results for note in r.dropped))[:8],
    }


def acceptance_stats(ok: list[RequestResult],
                     counters: tuple[SpecCounters | None, SpecCounters | None] = (None, None),
                     decode: list[DecodeBatch] | None = None) -> dict | None:
    """``total`` (the server's definition: all completion tokens / all verify steps of the cell),
    beside the per-request ``mean`` and ``p50``, and ``source``:

    - ``request``: the requests' own spec fields;
    - ``counters``: where they carry none (chat before sglang 0.5.19) and the server's /metrics
      counters read at the cell's edges moved (``total`` = Δtokens / Δverify calls);
    - ``log``: without counters either (a server started without ``--enable-metrics``), the
      ``Decode batch`` lines the cell's stretch of the server log holds: their ``accept len``
      weighted by ``#running-req``, the verify calls each line stands for (``lines``, ``weight``).

    Only ``request`` has per-request figures (``mean``, ``p50``, ``count``); the others are the
    server's, over every request it ran in the cell. None on a server known not to speculate, or
    with none of them."""
    if any(r.speculative is False for r in ok):
        return None
    values = [r.acceptance for r in ok if r.acceptance is not None]
    if not values:
        before, after = counters
        total = counter_acceptance(before, after)
        if total is not None and before is not None and after is not None:
            return {"total": total, "mean": None, "p50": None, "count": 0, "source": "counters",
                    "tokens": after.tokens - before.tokens, "verify_calls": after.verify_calls - before.verify_calls}
        total, lines, weight = weighted_accept(decode or ())
        if total is None:
            return None
        return {"total": total, "mean": None, "p50": None, "count": 0, "source": "log", "lines": lines,
                "weight": weight}
    steps = [(r.output_tokens, r.verify_steps) for r in ok if r.verify_steps]
    total = sum(t for t, _ in steps) / sum(v for _, v in steps) if steps else None
    return {"total": total, "mean": sum(values) / len(values), "p50": percentile(values, 50), "count": len(values),
            "source": "request"}


def cell_alarms(acceptance: dict | None) -> list[str]:
    """``acceptance_collapse`` when a speculative server's cell averaged <= 1.10 tokens per verify
    step (its drafter is not helping); acceptance is None on a plain server, which never raises it."""
    from backends.logs.alarms import THRESHOLD

    value = None if acceptance is None else acceptance.get("total") or acceptance.get("mean")
    return ["acceptance_collapse"] if value is not None and value <= THRESHOLD else []


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


class BenchRunner:
    def __init__(self, client: StreamingClient, plan: BenchPlan, store: RunStore,
                 problems: tuple[Problem, ...] = (), progress: ProgressCallback | None = None,
                 grade_parallel: int = 2, log_path: str | None = None) -> None:
        if plan.coding and not problems:
            raise ValueError("a coding bench needs problems")
        self.client = client
        self.plan = plan
        self.store = store
        self.problems = problems
        self.progress = progress or (lambda p: None)
        self.sizer = PromptSizer(self._measure)
        self._gate = asyncio.Semaphore(grade_parallel)
        self._nonce = int(time.time() * 1000) % 10**6
        self.eta = BenchEta(plan)
        self.log_path = log_path  # the server's log, read by offset over each cell (acceptance's last source)
        self._left: list[tuple[int, int]] = []  # the cells still to run after the one under way

    async def _measure(self, text: str) -> int:
        result = await self.client.chat([{"role": "user", "content": text}], max_tokens=1)
        if not result.ok or result.prompt_tokens is None:
            dropped = f" (dropped: {', '.join(result.dropped)})" if result.dropped else ""
            why = result.error or f"the response carried no usable usage.prompt_tokens{dropped}"
            raise ServerError(f"cannot size prompts: {why}", hint="ddtune counts prompt tokens with the server itself")
        return int(result.prompt_tokens)

    async def run(self) -> list[dict]:
        """Run every cell not already in cells.jsonl; returns all cells (old and new) in plan order."""
        if self.client.speculative is None:
            # acceptance only from a speculative server: what /server_info said when the run (re)started
            run = self.store.read_run()
            server = run.get("server_on_resume") or run.get("server") or {}
            self.client.speculative = speculative_from_info(server.get("server_info") if isinstance(server, dict)
                                                            else None)
        # a cell a resume cannot trust (an edited or absurd line) is measured again, never passed on
        kept = usable(self.store.cells(), check_cell, str(self.store.cells_file), warn,
                      "those cells are measured again")
        done = {(c["context"], c["concurrency"]): c for c in kept}
        cells = self.plan.cells()
        for ctx, conc in cells:
            if (ctx, conc) in done:
                continue
            self._left = [key for key in cells if key not in done and key != (ctx, conc)]
            t0 = time.perf_counter()
            cell = await self._run_cell(ctx, conc, len(done), len(cells))
            self.eta.cell_finished(conc, time.perf_counter() - t0)
            self.store.append_cell(cell)
            done[(ctx, conc)] = cell
            total = self.plan.requests_for(conc)
            self.progress(BenchProgress(len(done) - 1, len(cells), ctx, conc, total, total,
                                        "done", self.eta.eta(self._left)))
        return [done[key] for key in cells if key in done]

    async def _prompts(self, ctx: int, count: int) -> list[tuple[SizedPrompt, Problem | None]]:
        out: list[tuple[SizedPrompt, Problem | None]] = []
        for i in range(count):
            if self.plan.coding:
                problem = self.problems[i % len(self.problems)]
                out.append((await self.sizer.size(problem.id, problem.chat_prompt(), ctx), problem))
            else:
                out.append((await self.sizer.size("plain", PLAIN_TASK, ctx), None))
        return out

    async def _run_cell(self, ctx: int, conc: int, cells_done: int, cells_total: int) -> dict:
        total = self.plan.requests_for(conc)
        report = lambda n, phase: self.progress(BenchProgress(  # noqa: E731
            cells_done, cells_total, ctx, conc, n, total, phase, self.eta.eta(self._left, (conc, 1 - n / total))))
        report(0, "sizing")
        try:
            prompts = await self._prompts(ctx, max(total, self.plan.warmup))
        except ServerError as exc:
            raise self._lost(ctx, conc, cells_done, exc.message) from None
        if self.plan.warmup:
            report(0, "warmup")
            await self._batch(prompts[:self.plan.warmup], min(conc, self.plan.warmup), None, None)
        report(0, "running")
        speculative = self.client.speculative is not False
        before = await self.client.spec_counters() if speculative else None  # the cell's edges on /metrics
        offset = log_end(self.log_path) if speculative else None  # ... and in the server log
        started_at = time.time()
        t0 = time.perf_counter()
        results: list[RequestResult] = []
        grades: list[asyncio.Task] = []

        def finished(result: RequestResult, problem: Problem | None) -> None:
            results.append(result)
            record = {"kind": "bench", "context": ctx, "concurrency": conc,
                      "problem": problem.id if problem else None, **result.raw()}
            self.store.append_response(record)
            if problem is not None:
                grades.append(asyncio.ensure_future(self._grade(problem, result)))
            report(len(results), "running")

        if self.plan.release == "wave":
            await self._waves(prompts[:total], conc, finished)
        else:
            await self._batch(prompts[:total], conc, finished, ctx)
        duration = time.perf_counter() - t0
        after = await self.client.spec_counters() if before is not None else None
        decode = decode_since(self.log_path, offset)[0] if offset is not None and after is None else None
        graded = list(await asyncio.gather(*grades)) if self.plan.coding else None
        await self._check_alive(results, ctx, conc, cells_done)
        return cell_stats(ctx, conc, results, duration, graded, started_at, (before, after), decode)

    async def _grade(self, problem: Problem, result: RequestResult) -> Grade:
        if not result.ok:
            return Grade(problem.id, "error", f"request failed: {result.error}")
        raw = RawResponse(problem.id, result.content, result.reasoning_content, result.finish_reason)
        return await grade_async(problem, raw, gate=self._gate)

    async def _batch(self, prompts: list[tuple[SizedPrompt, Problem | None]], conc: int,
                     finished: Callable | None, ctx: int | None) -> None:
        queue = list(reversed(prompts))
        extra = None if self.plan.coding else {"ignore_eos": True}

        async def worker() -> None:
            while queue:
                sized, problem = queue.pop()
                self._nonce += 1
                msg = [{"role": "user", "content": sized.text(self._nonce)}]
                result = await self.client.chat(msg, max_tokens=self.plan.max_tokens, extra=extra)
                if finished is not None:
                    finished(result, problem)
                if result.unreachable:
                    queue.clear()

        await asyncio.gather(*(worker() for _ in range(max(1, conc))))

    async def _waves(self, prompts: list[tuple[SizedPrompt, Problem | None]], conc: int,
                     finished: Callable) -> None:
        """Send ``prompts`` in waves of ``conc``, each released at once (module docstring)."""
        extra = None if self.plan.coding else {"ignore_eos": True}
        for start in range(0, len(prompts), conc):
            wave = prompts[start:start + conc]
            await self.client.warm(len(wave))  # no request of the wave waits for a handshake
            release = WaveRelease(len(wave))  # each waits there with its bytes ready; the last lets all go

            async def send(sized: SizedPrompt, problem: Problem | None,
                           release: WaveRelease = release) -> RequestResult:
                self._nonce += 1
                msg = [{"role": "user", "content": sized.text(self._nonce)}]
                result = await self.client.chat(msg, max_tokens=self.plan.max_tokens, extra=extra, release=release)
                finished(result, problem)
                return result

            done = await asyncio.gather(*(send(sized, problem) for sized, problem in wave))
            if any(r.unreachable for r in done):
                return

    async def _check_alive(self, results: list[RequestResult], ctx: int, conc: int, cells_done: int) -> None:
        failed = [r for r in results if not r.ok]
        if not failed or (len(failed) < len(results) and not any(r.unreachable for r in failed)):
            return
        try:
            await server_info_of(self.client)
        except ServerError:
            raise self._lost(ctx, conc, cells_done, failed[0].error or "") from None

    def _lost(self, ctx: int, conc: int, cells_done: int, why: str) -> ServerError:
        return ServerError(
            f"the server at {self.client.base_url} stopped answering during cell context={ctx} "
            f"concurrency={conc}: {why}",
            hint=f"{cells_done} finished cell(s) are kept in {self.store.path}; "
                 f"start the server again and run 'ddtune bench --resume {self.store.path}'")

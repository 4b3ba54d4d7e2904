"""Live coding load: keep C coding prompts in flight, stream, grade, publish windowed rates.

The console's engine and ``ddtune load``'s. It never prints: everything goes out as events to a
callback (``on_event``) or through ``events()``, an async iterator. Rates use 1 s and 10 s sliding
windows of streamed tokens; acceptance in a window is tokens / verify steps of the requests that
finished in it (per-request values, never the server's lifetime average).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Union

from workloads.client import RequestResult, StreamingClient
from workloads.evaluate import VERDICTS, Grade, RawResponse, grade_async
from workloads.metrics import SlidingWindow, WindowStats
from workloads.problems import Problem
from workloads.results import RunStore


@dataclass(frozen=True)
class LoadStats:
    elapsed_s: float
    concurrency: int
    in_flight: int
    finished: int
    errors: int
    output_tokens: int
    window_1s: WindowStats
    window_10s: WindowStats
    verdicts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestFinished:
    problem: str
    result: RequestResult
    grade: Grade | None


@dataclass(frozen=True)
class StatsUpdated:
    stats: LoadStats


@dataclass(frozen=True)
class LoadStopped:
    reason: str  # "duration", "stopped", "interrupted", "server-unreachable"
    error: str | None
    stats: LoadStats


LoadEvent = Union[RequestFinished, StatsUpdated, LoadStopped]


class LoadEngine:
    def __init__(self, client: StreamingClient, problems: tuple[Problem, ...], *, concurrency: int,
                 max_tokens: int = 2048, on_event: Callable[[LoadEvent], None] | None = None,
                 store: RunStore | None = None, tick_s: float = 1.0, grade: bool = True,
                 unreachable_limit: int = 3, clock: Callable[[], float] = time.monotonic) -> None:
        if not problems:
            raise ValueError("the load needs at least one problem")
        self.client = client
        self.problems = problems
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.store = store
        self.tick_s = tick_s
        self.grade = grade
        self.unreachable_limit = unreachable_limit
        self.clock = clock
        self.window = SlidingWindow(10.0)
        self._listeners: list[Callable[[LoadEvent], None]] = [on_event] if on_event else []
        self._stop = asyncio.Event()
        self._stop_reason = "stopped"
        self._stop_error: str | None = None
        self._next = 0
        self._in_flight = 0
        self._finished = 0
        self._errors = 0
        self._tokens = 0
        self._unreachable = 0
        self._verdicts = {v: 0 for v in VERDICTS}
        self._gate = asyncio.Semaphore(2)
        self._grading: set[asyncio.Task] = set()
        self._started = clock()

    # ---- control ----------------------------------------------------------------------------
    def stop(self, reason: str = "stopped", error: str | None = None) -> None:
        if not self._stop.is_set():
            self._stop_reason, self._stop_error = reason, error
            self._stop.set()

    def snapshot(self) -> LoadStats:
        now = self.clock()
        return LoadStats(now - self._started, self.concurrency, self._in_flight, self._finished, self._errors,
                         self._tokens, self.window.stats(now, 1.0), self.window.stats(now, 10.0), dict(self._verdicts))

    async def events(self) -> AsyncIterator[LoadEvent]:
        """Every event from now on, ending after LoadStopped. Use while ``run()`` runs in a task."""
        queue: asyncio.Queue[LoadEvent] = asyncio.Queue()
        self._listeners.append(queue.put_nowait)
        try:
            while True:
                event = await queue.get()
                yield event
                if isinstance(event, LoadStopped):
                    return
        finally:
            self._listeners.remove(queue.put_nowait)

    def add_listener(self, listener: Callable[[LoadEvent], None]) -> None:
        self._listeners.append(listener)

    def _emit(self, event: LoadEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    # ---- running ----------------------------------------------------------------------------
    async def run(self, duration_s: float | None = None) -> LoadStats:
        self._started = self.clock()
        workers = [asyncio.ensure_future(self._worker()) for _ in range(self.concurrency)]
        ticker = asyncio.ensure_future(self._ticker())
        try:
            if duration_s is None:
                await self._stop.wait()
            else:
                try:
                    await asyncio.wait_for(self._stop.wait(), duration_s)
                except asyncio.TimeoutError:
                    self.stop("duration")
        finally:
            self._stop.set()
            for task in (*workers, ticker):
                task.cancel()
            await asyncio.gather(*workers, ticker, return_exceptions=True)
            if self._grading:  # answers already in: let their sandboxes finish (bounded by the wall limit)
                await asyncio.gather(*self._grading, return_exceptions=True)
            if self.store is not None:
                self.store.sync()
        stats = self.snapshot()
        self._emit(LoadStopped(self._stop_reason, self._stop_error, stats))
        return stats

    async def _ticker(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(self.tick_s)
            self._emit(StatsUpdated(self.snapshot()))

    def _on_tokens(self, n: int) -> None:
        self._tokens += n
        self.window.add_tokens(self.clock(), n)

    async def _worker(self) -> None:
        while not self._stop.is_set():
            while len(self._grading) > 2 * self.concurrency:  # backpressure when grading falls behind
                await asyncio.wait(set(self._grading), return_when=asyncio.FIRST_COMPLETED)
            problem = self.problems[self._next % len(self.problems)]
            self._next += 1
            self._in_flight += 1
            try:
                result = await self.client.chat([{"role": "user", "content": problem.chat_prompt()}],
                                                max_tokens=self.max_tokens, on_tokens=self._on_tokens)
            finally:
                self._in_flight -= 1
            await self._finish(problem, result)

    async def _finish(self, problem: Problem, result: RequestResult) -> None:
        now = self.clock()
        if self.store is not None:
            self.store.append_response({"kind": "load", "problem": problem.id, **result.raw()})
        if not result.ok:
            self._errors += 1
            self._unreachable = self._unreachable + 1 if result.unreachable else 0
            self._emit(RequestFinished(problem.id, result, None))
            if self._unreachable >= self.unreachable_limit:
                self.stop("server-unreachable", result.error)
            elif result.unreachable:
                await asyncio.sleep(0.5)
            return
        self._unreachable = 0
        self._finished += 1
        self.window.add_finished(now, result.output_tokens, result.spec_verify_ct)
        if not self.grade:
            self._emit(RequestFinished(problem.id, result, None))
            return
        # Grade in the background: the worker goes straight back to keeping C requests in flight.
        task = asyncio.ensure_future(self._grade(problem, result))
        self._grading.add(task)
        task.add_done_callback(self._grading.discard)

    async def _grade(self, problem: Problem, result: RequestResult) -> None:
        raw = RawResponse(problem.id, result.content, result.reasoning_content, result.finish_reason)
        grade = await grade_async(problem, raw, gate=self._gate)
        self._verdicts[grade.verdict] = self._verdicts.get(grade.verdict, 0) + 1
        self._emit(RequestFinished(problem.id, result, grade))

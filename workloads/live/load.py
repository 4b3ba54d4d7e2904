"""Live load: keep C prompts of a prompt set in flight, stream, grade coding answers, publish windowed rates.

The console's engine and ``ddtune load``'s. It never prints: everything goes out as events to a
callback (``on_event``) or through ``events()``, an async iterator. Rates come from the one window
engine (workloads/live/windows.py): the 1 s and the rolling ``roll_s`` (5 s) rate of streamed
tokens, and closed ``roll_s`` windows; acceptance in a window is tokens / verify steps of the
requests that finished in it (never the server's lifetime average). ``pause()`` cancels the
requests in flight (each reported as a RequestDone ``cancelled``, never as an error) and sends nothing until
``resume()``: the console pauses the load while it restarts the server.

The prompts are any set's records (workloads/prompts), each sent as its source wrote it, in turn;
a record with follow-up turns (MT-Bench, AIPerf sessions) is a conversation: each later turn is sent
after the model's reply to the one before, with that reply as the assistant's turn. Answers to the
built-in coding problems are graded; other answers are not (their verdict is ``-``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from backends.logs import decode_since, log_end
from backends.logs import SpecCounters
from workloads.client.result import RequestResult
from workloads.client.stream import StreamingClient
from workloads.grading.evaluate import VERDICTS, Grade, RawResponse, grade_async
from workloads.live.events import LoadEvent, LoadPaused, LoadResumed, LoadStats, LoadStopped, RequestDone, StatsUpdated
from workloads.live.windows import LiveWindows
from workloads.grading.problems import Problem
from workloads.prompts.records import PromptRecord
from workloads.runs.store import RunStore


class LoadEngine:
    def __init__(self, client: StreamingClient, records: tuple[PromptRecord, ...], *, concurrency: int,
                 problems: tuple[Problem, ...] = (), prompts: str = "coding",
                 max_tokens: int = 2048, on_event: Callable[[LoadEvent], object] | None = None,
                 store: RunStore | None = None, tick_s: float = 1.0, grade: bool = True,
                 unreachable_limit: int = 3, clock: Callable[[], float] = time.monotonic,
                 roll_s: float = 5.0, log_path: str | None = None) -> None:
        if not records:
            raise ValueError("the load needs at least one prompt")
        self.client = client
        self.records = records
        self.graders = {p.id: p for p in problems}  # the coding problems whose answers are graded
        self.prompts = prompts                      # the source's name, as results carry it
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.store = store
        self.tick_s = tick_s
        self.grade = grade
        self.unreachable_limit = unreachable_limit
        self.clock = clock
        self.roll_s = roll_s
        self.windows = LiveWindows(clock(), roll_s)
        self._ended: float | None = None  # when the load stopped sending (grading may go on after)
        self._listeners: list[Callable[[LoadEvent], object]] = [on_event] if on_event else []
        self._stop = asyncio.Event()
        self._stop_reason = "stopped"
        self._stop_error: str | None = None
        self._next = 0
        self._in_flight = 0
        self._finished = 0
        self._errors = 0
        self._tokens = 0
        self._unreachable = 0
        self._spec_tokens = self._spec_verify = 0   # of finished requests that carried spec fields
        self._counters: list[SpecCounters] = []    # the first and the latest /metrics reading
        self.log_path = log_path  # headless: the server log, read by offset each tick (backends/logs/span.py)
        self._log_offset: int | None = None
        self._log_sum = self._log_weight = 0.0     # accept len x #running-req, #running-req of the decode lines
        self._verdicts = {v: 0 for v in VERDICTS}
        self._gate = asyncio.Semaphore(2)
        self._grading: set[asyncio.Task] = set()
        self._requests: set[asyncio.Task] = set()
        self._cancelled = 0
        self._drop_grading = False
        self._sending = asyncio.Event()  # cleared while paused
        self._sending.set()
        self._drained = asyncio.Event()  # set while no request is in flight
        self._drained.set()
        self._started = clock()

    @classmethod
    def for_problems(cls, client: StreamingClient, problems: tuple[Problem, ...], **kwargs) -> LoadEngine:
        """A load of the coding problems given, their answers graded."""
        from workloads.prompts.sources import coding_records

        return cls(client, coding_records(problems), problems=problems, prompts="coding", **kwargs)

    # ---- control ----------------------------------------------------------------------------
    def stop(self, reason: str = "stopped", error: str | None = None, *, drop_grading: bool = False) -> None:
        """End the run. Answers already in are still graded unless ``drop_grading`` (a hurried stop:
        grades not yet started never start; a sandbox already running ends at its own wall limit)."""
        if not self._stop.is_set():
            self._stop_reason, self._stop_error = reason, error
            self._stop.set()
        if drop_grading:
            self._drop_grading = True
            for task in list(self._grading):
                task.cancel()

    @property
    def started_at(self) -> float:
        """When the run began, on the engine's clock (its windows count from here)."""
        return self._started

    @property
    def ended_at(self) -> float | None:
        """When the run stopped sending, on the engine's clock; None while it runs."""
        return self._ended

    @property
    def paused(self) -> bool:
        return not self._sending.is_set()

    async def pause(self) -> int:
        """Send nothing new and cancel every request in flight; each is reported (``cancelled``)
        before LoadPaused. Returns how many were cancelled. Grading of answers already in goes on."""
        if self.paused or self._stop.is_set():
            return 0
        self._sending.clear()
        self.windows.pause()
        before = self._cancelled
        for task in list(self._requests):
            task.cancel()
        await self._drained.wait()
        cancelled = self._cancelled - before
        self._emit(LoadPaused(cancelled, self.snapshot()))
        return cancelled

    def resume(self) -> None:
        if self.paused and not self._stop.is_set():
            self.windows.resume(self.clock())
            self._sending.set()
            self._emit(LoadResumed(self.snapshot()))

    def snapshot(self) -> LoadStats:
        """The counters now; windows that ended by now are closed. After the run, the time stays at
        the stop: ``elapsed_s`` is the time the load ran, not the grading that followed."""
        now = self.clock() if self._ended is None else self._ended
        self.windows.close(now)
        closed = self.windows.closed
        accept: tuple[float, float, str | None] = (0.0, 0.0, None)
        if self._spec_verify:
            accept = (self._spec_tokens, self._spec_verify, "request")
        elif len(self._counters) == 2 and self._counters[1].verify_calls > self._counters[0].verify_calls:
            first, last = self._counters
            accept = (last.tokens - first.tokens, last.verify_calls - first.verify_calls, "counters")
        elif self._log_weight:
            accept = (self._log_sum, self._log_weight, "log")
        return LoadStats(now - self._started, self.concurrency, self._in_flight, self._finished, self._errors,
                         self._tokens, self.windows.rate(now, 1.0), self.windows.rate(now, self.roll_s),
                         dict(self._verdicts), self._cancelled, self.paused, closed[-1] if closed else None,
                         *accept)

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

    def add_listener(self, listener: Callable[[LoadEvent], object]) -> None:
        self._listeners.append(listener)

    def _emit(self, event: LoadEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    # ---- running ----------------------------------------------------------------------------
    async def run(self, duration_s: float | None = None) -> LoadStats:
        self._started = self.clock()
        self.windows = LiveWindows(self._started, self.roll_s)
        self._log_offset = log_end(self.log_path)
        await self._read_counters()  # the first edge
        workers = [asyncio.ensure_future(self._worker()) for _ in range(self.concurrency)]
        ticker = asyncio.ensure_future(self._ticker())
        try:
            if duration_s is None:
                await self._stop.wait()
            else:
                try:
                    await asyncio.wait_for(self._stop.wait(), duration_s)
                except TimeoutError:
                    self.stop("duration")
        finally:
            self._stop.set()
            self._ended = self.clock()
            for task in (*workers, ticker):
                task.cancel()
            await asyncio.gather(*workers, ticker, return_exceptions=True)
            if self._grading:  # answers already in: let their sandboxes finish (bounded by the wall limit)
                if self._drop_grading:
                    for task in self._grading:
                        task.cancel()
                await asyncio.gather(*self._grading, return_exceptions=True)
            if self.store is not None:
                self.store.sync()
        stats = self.snapshot()
        self._emit(LoadStopped(self._stop_reason, self._stop_error, stats))
        return stats

    async def _ticker(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(self.tick_s)
            await self._read_counters()
            self._emit(StatsUpdated(self.snapshot()))

    async def _read_counters(self) -> None:
        """The server's /metrics counters, for the windows' acceptance where the requests carry none
        (chat before sglang 0.5.19); never for a server known not to speculate, nor once it has none,
        nor once a finished request has carried its own spec fields (0.5.19+): then the requests are
        the figure (``_acceptance_in`` prefers them), and a scrape per tick would cost the server and
        this process a /metrics page each second for nothing."""
        c = self.client
        if getattr(c, "speculative", None) is False or not hasattr(c, "spec_counters") or self._spec_verify:
            return
        counters = await c.spec_counters() if getattr(c, "metrics", None) is not False else None
        self.windows.add_counters(self.clock(), counters)
        if counters is not None:
            self._counters = [self._counters[0] if self._counters else counters, counters]
        elif self.log_path is not None:
            events, self._log_offset = decode_since(self.log_path, self._log_offset)
            now = self.clock()
            for e in events:
                self.add_decode(now, e.accept_len, e.running_req)

    def add_decode(self, t: float, accept_len: float | None, running_req: int) -> None:
        """One of the server's lead-rank, non-idle ``Decode batch`` lines, read at ``t``: acceptance's
        last source, where neither the requests nor the counters carry it (the console's worker gets
        them from its session's one log tail; headless, the engine reads its ``log_path``)."""
        if getattr(self.client, "speculative", None) is False or accept_len is None or running_req <= 0:
            return
        if self._counters or self._spec_verify:
            return  # a better source is there
        self.windows.add_decode(t, accept_len, running_req)
        self._log_sum += accept_len * running_req
        self._log_weight += running_req

    def _on_tokens(self, n: int, exact: bool) -> None:
        self._tokens += n
        self.windows.add_tokens(self.clock(), n, exact)

    async def _worker(self) -> None:
        turn: tuple[PromptRecord, list[dict], int] | None = None  # a conversation's next turn
        while not self._stop.is_set():
            await self._sending.wait()
            while len(self._grading) > 2 * self.concurrency:  # backpressure when grading falls behind
                await asyncio.wait(set(self._grading), return_when=asyncio.FIRST_COMPLETED)
            if self.paused:
                turn = None  # a pause ends the conversation
                continue
            if turn is None:
                record = self.records[self._next % len(self.records)]
                self._next += 1
                turn = (record, record.chat(), 0)
            record, messages, index = turn
            streamed = [0]

            def on_tokens(n: int, exact: bool, streamed: list[int] = streamed) -> None:
                streamed[0] += n
                self._on_tokens(n, exact)

            # The request runs as its own task so pause() can cancel it without ending this worker.
            request = asyncio.ensure_future(self.client.chat(
                messages, max_tokens=record.max_tokens or self.max_tokens, on_tokens=on_tokens))
            self._requests.add(request)
            self._in_flight += 1
            self._drained.clear()
            try:
                await asyncio.wait((request,))
            finally:
                self._requests.discard(request)
                if not request.done():  # this worker itself was cancelled (the run is ending)
                    request.cancel()
                self._in_flight -= 1
                if not self._in_flight:
                    self._drained.set()
            turn = None
            if request.cancelled():
                self._cancelled += 1
                self._emit(RequestDone(record.id, False, streamed[0], 0.0, None, None, None, "cancelled",
                                          "cancelled: the load was paused"))
                continue
            result = request.result()
            if result.ok and index < len(record.followups):  # the live reply goes back with the next turn
                turn = (record, [*messages, {"role": "assistant", "content": result.content},
                                 {"role": "user", "content": record.followups[index]}], index + 1)
            await self._finish(record, result, index)

    async def _finish(self, record: PromptRecord, result: RequestResult, turn: int = 0) -> None:
        now = self.clock()
        problem = self.graders.get(record.problem) if record.problem and turn == 0 else None
        if self.store is not None:
            self.store.append_response({"kind": "load", "prompts": self.prompts, "record": record.id, "turn": turn,
                                        "problem": problem.id if problem else None, **result.raw()})
        if not result.ok:
            self._errors += 1
            self._unreachable = self._unreachable + 1 if result.unreachable else 0
            self._emit(_done(record.id, result, None))
            if self._unreachable >= self.unreachable_limit:
                self.stop("server-unreachable", result.error)
            elif result.unreachable:
                await asyncio.sleep(0.5)
            return
        self._unreachable = 0
        self._finished += 1
        self.windows.add_finished(now, result.output_tokens, result.spec_verify_ct)
        if result.verify_steps:
            self._spec_tokens += result.output_tokens
            self._spec_verify += result.verify_steps
        if not self.grade or problem is None:
            self._emit(_done(record.id, result, None))
            return
        # Grade in the background: the worker goes straight back to keeping C requests in flight.
        task = asyncio.ensure_future(self._grade(problem, result))
        self._grading.add(task)
        task.add_done_callback(self._grading.discard)

    async def _grade(self, problem: Problem, result: RequestResult) -> None:
        raw = RawResponse(problem.id, result.content, result.reasoning_content, result.finish_reason)
        grade = await grade_async(problem, raw, gate=self._gate)
        self._verdicts[grade.verdict] = self._verdicts.get(grade.verdict, 0) + 1
        self._emit(_done(problem.id, result, grade))


def _done(problem: str, result: RequestResult, grade: Grade | None) -> RequestDone:
    """A finished or failed request as the load reports it (the worker sends the same record)."""
    return RequestDone(problem, result.ok, result.output_tokens, result.decode_tok_s or 0.0, result.acceptance,
                       result.ttft_s, result.e2e_s, grade.verdict if grade else ("error" if not result.ok else "-"),
                       grade.detail if grade else result.error)

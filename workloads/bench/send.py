"""How a cell's jobs leave: in waves, staggered, or at a request rate; each job a conversation.

A job's first turn is its prompt; each follow-up turn (``Job.followups``) is sent after the model's
reply to the one before, with that reply as the assistant's turn (as sglang.bench_serving and AIPerf
do), so a multi-turn job is several requests, one after another. Only a first turn waits for its
wave or its arrival time; follow-ups go as soon as their reply is in.

- ``waves``: each wave of ``concurrency`` jobs leaves at once (connections opened and bytes built
  first, then ``transport.WaveRelease`` lets them all go) and the next starts when it is done;
- ``staggered``: ``concurrency`` slots each send their next job when their last one ends
  (sglang.bench_serving ``--max-concurrency``);
- ``at_rate``: each job at its arrival time (workloads/bench/arrivals.py), at most ``concurrency``
  in flight: a job whose time has come waits for a free slot (``scheduled_s`` is its arrival time).

Sending stops once a request finds the server unreachable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from workloads.bench.traffic import Job
from workloads.bench.watch import InFlight
from workloads.client.result import RequestResult
from workloads.client.transport import WaveRelease

Finished = Callable[[Job, int, RequestResult, float | None], None]  # job, turn, result, scheduled_s


class Sender:
    def __init__(self, client, ignore_eos: bool, flight: InFlight | None = None) -> None:
        self.client = client
        self.extra = {"ignore_eos": True} if ignore_eos else None
        self.flight = flight or InFlight()
        self.stopped = False  # the server could not be reached: nothing more is sent

    async def conversation(self, job: Job, finished: Finished | None, release: WaveRelease | None = None,
                           scheduled: float | None = None) -> list[RequestResult]:
        messages = job.prompt.chat()
        results: list[RequestResult] = []
        for turn in range(1 + len(job.followups)):
            self.flight.enter()
            try:
                result = await self.client.chat(messages, max_tokens=job.max_tokens, extra=self.extra,
                                                release=release if turn == 0 else None)
            finally:
                self.flight.leave()
            results.append(result)
            if finished is not None:
                finished(job, turn, result, scheduled)
            if result.unreachable:
                self.stopped = True
            if not result.ok or turn == len(job.followups):
                break
            messages = [*messages, {"role": "assistant", "content": result.content},
                        {"role": "user", "content": job.followups[turn]}]
        return results

    async def waves(self, jobs: list[Job], concurrency: int, finished: Finished) -> None:
        for start in range(0, len(jobs), concurrency):
            wave = jobs[start:start + concurrency]
            await self.client.warm(len(wave))  # no request of the wave waits for a handshake
            release = WaveRelease(len(wave))   # each waits there with its bytes ready; the last lets all go
            await asyncio.gather(*(self.conversation(job, finished, release) for job in wave))
            if self.stopped:
                return

    async def staggered(self, jobs: list[Job], concurrency: int, finished: Finished | None) -> None:
        queue = list(reversed(jobs))

        async def slot() -> None:
            while queue and not self.stopped:
                await self.conversation(queue.pop(), finished)

        await asyncio.gather(*(slot() for _ in range(max(1, concurrency))))

    async def at_rate(self, jobs: list[Job], concurrency: int, offsets: list[float], finished: Finished) -> None:
        loop = asyncio.get_running_loop()
        slots = asyncio.Semaphore(max(1, concurrency))
        await self.client.warm(min(concurrency, len(jobs)))
        start = loop.time()

        async def arrive(job: Job, offset: float) -> None:
            delay = start + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            async with slots:
                if not self.stopped:
                    await self.conversation(job, finished, scheduled=offset)

        await asyncio.gather(*(arrive(job, offset) for job, offset in zip(jobs, offsets, strict=True)))

"""The simulated scheduler: admits requests, runs batched verify steps in real time, logs like SGLang.

One loop for the whole batch, as in SGLang: each step takes ``model.step_ms`` (or ``--sim-step-ms``)
for the current batch, then every running request advances by a sampled accepted length and its
``on_step`` callback fires (the HTTP layer writes a stream chunk there). Prefill batches print
``Prefill batch`` lines; every ``--decode-log-interval`` steps a ``Decode batch`` line is printed.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from backends.sim import model
from backends.sim.args import SimArgs
from backends.sim.http import flush_dirty
from backends.sim.logwriter import LogWriter

KV_TOKENS = 708_314
UNPACED_STEPS = 8


@dataclass(eq=False)
class SimRequest:
    prompt_tokens: int
    tokens: tuple[str, ...]          # the planned answer
    think_end: int
    max_new_tokens: int
    rng: random.Random
    filler: tuple[str, ...] = ()     # continues the output when ignore_eos is set
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)
    on_step: Callable[[SimRequest, int, int], None] | None = None   # (request, start index, end index)
    out: list[str] = field(default_factory=list)
    verify_ct: int = 0
    correct_drafts: int = 0
    proposed_drafts: int = 0
    created: float = field(default_factory=time.time)
    start: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None
    finish_reason: str | None = None   # "stop", "length" or "abort"
    done: asyncio.Future[SimRequest] | None = None
    streaming: bool = False            # the counters' is_streaming label
    histogram: list[int] = field(default_factory=list)  # verify steps by correct drafts (0.5.17's meta_info)

    @property
    def completion_tokens(self) -> int:
        return len(self.out)

    @property
    def context(self) -> int:
        return self.prompt_tokens + len(self.out)

    @property
    def accept_length(self) -> float:
        return len(self.out) / self.verify_ct if self.verify_ct else 1.0

    @property
    def accept_rate(self) -> float:
        return self.correct_drafts / self.proposed_drafts if self.proposed_drafts else 0.0

    def next_token(self, i: int) -> str | None:
        if i < len(self.tokens):
            return self.tokens[i]
        if self.filler:
            return self.filler[(i - len(self.tokens)) % len(self.filler)]
        return None


class Engine:
    def __init__(self, args: SimArgs, log: LogWriter) -> None:
        self.args = args
        self.log = log
        self.knobs = model.Knobs(args.algorithm, args.block_size, args.budget, args.topk, args.window)
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.wakeup = asyncio.Event()
        self.steps = 0
        self.forward_ct = 0  # prefill and decode forwards: the [N] of SGLANG_LOG_FORWARD_ITERS
        # lifetime stats (for /server_info and /metrics)
        self.total_tokens = 0
        self.total_verify = 0
        self.total_correct = 0
        self.total_proposed = 0
        self.total_prompt_tokens = 0
        self.total_requests = 0
        self.last_gen_throughput = 0.0
        # Prometheus counters (by is_streaming): never reset, not even by /flush_cache
        self.counted_tokens = {False: 0, True: 0}
        self.counted_prompt = {False: 0, True: 0}
        self.counted_requests = {False: 0, True: 0}
        self.counted_verify = 0
        self._last_batch = 0   # requests in the latest step's batch (the idle line's #running-req)
        self.avg_accept_length = 1.0 if not args.speculative else 0.0
        self.ttfts: deque[float] = deque(maxlen=100_000)
        self.ttft_streaming: deque[bool] = deque(maxlen=100_000)  # is_streaming of each ttfts sample
        self.itls: deque[tuple[float, int]] = deque(maxlen=100_000)   # (mean chunk gap, gaps) per request
        # decode-log interval window
        self._win_tokens = 0
        self._win_verify = 0
        self._win_correct = 0
        self._win_proposed = 0
        self._win_start = time.monotonic()
        self._task: asyncio.Task | None = None
        self._acc_cache: dict[int, model.Acceptance] = {}

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def submit(self, req: SimRequest) -> asyncio.Future[SimRequest]:
        """Queue the request; the future resolves when it finishes or is aborted."""
        done: asyncio.Future[SimRequest] = asyncio.get_running_loop().create_future()
        req.done = done
        self.total_requests += 1
        self.total_prompt_tokens += req.prompt_tokens
        self.counted_requests[req.streaming] += 1
        self.counted_prompt[req.streaming] += req.prompt_tokens
        self.waiting.append(req)
        self.wakeup.set()
        return done

    def abort(self, rid: str | None = None) -> int:
        n = 0
        for r in list(self.running) + list(self.waiting):
            if rid is None or r.rid == rid:
                self._finish(r, "abort")
                n += 1
        self.running = [r for r in self.running if r.finish_reason is None]
        self.waiting = deque(r for r in self.waiting if r.finish_reason is None)
        return n

    def flush_cache(self) -> bool:
        if self.running or self.waiting:
            return False
        self.total_tokens = self.total_verify = self.total_correct = self.total_proposed = 0
        self.avg_accept_length = 1.0 if not self.args.speculative else 0.0
        self.log.info("Cache flushed successfully!")
        return True

    def _finish(self, req: SimRequest, reason: str) -> None:
        if req.finish_reason is not None:
            return
        req.finish_reason = reason
        if req.first_token_at is not None and req.verify_ct > 1:
            # mean gap between streamed chunks of this request (feeds the ITL histogram)
            self.itls.append(((time.monotonic() - req.first_token_at) / (req.verify_ct - 1), req.verify_ct - 1))
        if req.on_step is not None:
            n = len(req.out)
            req.on_step(req, n, n)
        if req.done is not None and not req.done.done():
            req.done.set_result(req)

    def _admit(self) -> float:
        new = []
        while self.waiting and len(self.running) < self.args.max_running_requests:
            new.append(self.waiting.popleft())
        if not new:
            return 0.0
        self.running.extend(new)
        n_tok = sum(r.prompt_tokens for r in new)
        ms = model.prefill_ms(n_tok)
        usage = sum(r.context for r in self.running) / KV_TOKENS
        self.forward_ct += 1
        self.log.info(f"Prefill batch{self._iter()}, #new-seq: {len(new)}, #new-token: {n_tok}, #cached-token: 0, "
                      f"token usage: {usage:.2f}, #running-req: {len(self.running) - len(new)}, "
                      f"#queue-req: {len(self.waiting)}, #pending-token: 0, cuda graph: False, "
                      f"input throughput (token/s): {n_tok / (ms / 1000):.2f}")
        return ms

    async def _loop(self) -> None:
        next_at = time.monotonic()
        while True:
            if not self.running and not self.waiting:
                self.wakeup.clear()
                await self.wakeup.wait()
                next_at = time.monotonic()
                self._win_start = next_at
            prefill = self._admit()
            if self.args.step_ms is not None:
                step = self.args.step_ms + (prefill if self.args.step_ms else 0.0)
            else:
                step = prefill + model.step_ms(self.knobs, len(self.running), sum(r.context for r in self.running))
            if step > 0:
                next_at = max(next_at + step / 1000.0, time.monotonic() - 0.05)
                delay = next_at - time.monotonic()
                await asyncio.sleep(max(0.0, delay))
                self._step()
            else:
                # no pacing: several steps per loop turn, so each socket write carries several chunks
                for _ in range(UNPACED_STEPS):
                    self._step()
                    if not self.running:
                        break
            flush_dirty()
            if step <= 0:
                await asyncio.sleep(0)

    def _acceptance(self, context: int) -> model.Acceptance:
        key = context >> 7   # acceptance changes slowly with context: cache per 128 tokens
        acc = self._acc_cache.get(key)
        if acc is None:
            if self.args.acceptance is not None and self.knobs.algorithm is not None:
                acc = model.forced_acceptance(self.knobs, self.args.acceptance)
            else:
                acc = model.acceptance(self.knobs, context)
            self._acc_cache[key] = acc
        return acc

    def _accepted(self, r) -> int:
        """Tokens one verify step yields: a selftest draft's weights decide it (every drafted token
        accepted, or none), else the performance model."""
        if self.args.draft_agreement == "agree":
            return self.args.block_size
        if self.args.draft_agreement == "random":
            return 1
        return model.sample_accept(r.rng, self._acceptance(r.context))

    def _step(self) -> None:
        now = time.monotonic()
        self.steps += 1
        self.forward_ct += 1
        still = []
        spec = self.args.speculative
        for r in self.running:
            if r.finish_reason is not None:
                continue
            k = self._accepted(r) if spec else 1
            start = len(r.out)
            want = min(k, r.max_new_tokens - start)
            if start + want <= len(r.tokens):
                r.out.extend(r.tokens[start:start + want])
                produced = want
            else:
                produced = 0
                for i in range(start, start + want):
                    tok = r.next_token(i)
                    if tok is None:
                        break
                    r.out.append(tok)
                    produced += 1
            r.verify_ct += 1
            if spec:
                if not r.histogram:
                    r.histogram = [0] * self.args.block_size
                r.histogram[min(max(0, k - 1), len(r.histogram) - 1)] += 1
                proposed = self.knobs.proposed
                r.proposed_drafts += proposed
                r.correct_drafts += max(0, k - 1)
                self._win_proposed += proposed
                self._win_correct += max(0, k - 1)
                self.total_proposed += proposed
                self.total_correct += max(0, k - 1)
            self._win_tokens += produced
            self._win_verify += 1
            self.total_tokens += produced
            self.total_verify += 1
            self.counted_tokens[r.streaming] += produced
            self.counted_verify += spec
            if r.first_token_at is None and produced:
                r.first_token_at = now
                self.ttfts.append(now - r.start)
                self.ttft_streaming.append(r.streaming)
            if r.on_step is not None and produced:
                r.on_step(r, start, start + produced)
                if r.finish_reason is not None:
                    continue
            if len(r.out) >= r.max_new_tokens:
                self._finish(r, "length")
            elif r.next_token(len(r.out)) is None:
                self._finish(r, "stop")
            else:
                still.append(r)
        batch = len(self.running)
        self.running = still
        if self.steps % self.args.decode_log_interval == 0:
            self._decode_log(now)
        elif not still and batch and self._win_verify:
            # the burst ended between two ticks: a real server prints one more line then, with the batch
            # it had, #token: 0 and the rate of that short interval (recorded on 0.5.17)
            self._last_batch = batch
            self._decode_log(now, idle=True)

    def _iter(self) -> str:
        """`` [N]`` after ``Decode batch``/``Prefill batch`` when the server logs forward iterations."""
        return f" [{self.forward_ct}]" if self.args.log_forward_iters else ""

    def _decode_log(self, now: float, idle: bool = False) -> None:
        elapsed = max(1e-6, now - self._win_start)
        self.last_gen_throughput = self._win_tokens / elapsed
        spec = ""
        if self.args.speculative and self._win_verify:
            accept_len = self._win_tokens / self._win_verify
            accept_rate = self._win_correct / self._win_proposed if self._win_proposed else 0.0
            spec = f"accept len: {accept_len:.2f}, accept rate: {accept_rate:.2f}, "
        if self.args.speculative and self.total_verify:
            self.avg_accept_length = self.total_tokens / self.total_verify
        tokens = sum(r.context for r in self.running)
        running = self._last_batch if idle else len(self.running)
        self.log.info(f"Decode batch{self._iter()}, #running-req: {running}, #token: {tokens}, "
                      f"token usage: {tokens / KV_TOKENS:.2f}, {spec}cuda graph: True, "
                      f"gen throughput (token/s): {self.last_gen_throughput:.2f}, #queue-req: {len(self.waiting)}")
        self._win_tokens = self._win_verify = self._win_correct = self._win_proposed = 0
        self._win_start = now


_ids = itertools.count()

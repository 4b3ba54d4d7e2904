"""Async telemetry stream: samples GPUs and host every ``interval`` seconds off the event loop and keeps
bounded histories for plots.

    stream = TelemetryStream(server=lambda: (pid, pgid), interval=1.0, lanes=lane_trees)
    async for sample in stream:          # one TelemetrySample per interval (with each lane server's share)
        post(GpuSampled(sample))         # the UI reads stream.history for its charts
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from backends.core.errors import UsageError
from backends.machine.gpu import GpuSampler, GpuSnapshot
from backends.machine.host import HostSampler, HostSnapshot, server_tree_pids
from backends.server.lane_gpu import LaneShare, LaneTree, lane_shares

ServerRef = tuple[int, int | None] | None   # (pid, pgid) of the managed server, or None


@dataclass(frozen=True)
class TelemetrySample:
    gpu: GpuSnapshot
    host: HostSnapshot
    server_pids: tuple[int, ...]
    lanes: tuple[LaneShare, ...] = ()   # each live lane server's GPU memory (backends/server/lane_gpu.py)


class History:
    """Bounded time series: one deque per device for memory used, GPU utilisation and power, plus the
    server's GPU bytes and host CPU%. ``maxlen`` samples each (300 at 1 s = five minutes)."""

    def __init__(self, maxlen: int = 300) -> None:
        if maxlen < 1:
            raise UsageError(f"history length must be at least 1, got {maxlen}", hint="use e.g. 300")
        self.maxlen = maxlen
        self.times: deque[float] = deque(maxlen=maxlen)
        self.memory_used: dict[int, deque[float]] = {}
        self.util_gpu: dict[int, deque[float]] = {}
        self.power_w: dict[int, deque[float]] = {}
        self.server_bytes: deque[float] = deque(maxlen=maxlen)
        self.host_cpu: deque[float] = deque(maxlen=maxlen)

    def _series(self, table: dict[int, deque[float]], index: int) -> deque[float]:
        series = table.get(index)
        if series is None:
            series = table[index] = deque(maxlen=self.maxlen)
        return series

    def add(self, sample: TelemetrySample) -> None:
        self.times.append(sample.gpu.timestamp or sample.host.timestamp)
        for dev in sample.gpu.devices:
            self._series(self.memory_used, dev.index).append(float(dev.memory_used or 0))
            self._series(self.util_gpu, dev.index).append(float(dev.util_gpu or 0))
            self._series(self.power_w, dev.index).append(float(dev.power_w or 0.0))
        share = sample.gpu.server_share
        self.server_bytes.append(float(share.used_bytes) if share else 0.0)
        self.host_cpu.append(sample.host.cpu_percent)

    def __len__(self) -> int:
        return len(self.times)


class TelemetryStream:
    """Samples every ``interval`` seconds (default 1). Blocking NVML and /proc reads run in a worker
    thread via ``asyncio.to_thread``. The server's tree is re-walked every ``tree_every`` seconds, and
    so are the lane servers' trees when ``lanes`` (e.g. backends.server.lane_gpu.lane_trees) is given."""

    def __init__(self, server: Callable[[], ServerRef] = lambda: None, interval: float = 1.0,
                 history: int = 300, gpu: GpuSampler | None = None, host: HostSampler | None = None,
                 tree_every: float = 5.0, lanes: Callable[[], tuple[LaneTree, ...]] | None = None) -> None:
        if not interval > 0:
            raise UsageError(f"telemetry interval must be > 0 seconds, got {interval}", hint="use e.g. 1.0")
        self.interval = interval
        self.history = History(history)
        self.gpu = gpu or GpuSampler()
        self.host = host or HostSampler()
        self._server = server
        self._tree_every = tree_every
        self._tree: tuple[int, ...] = ()
        self._tree_ref: ServerRef = None
        self._tree_at = float("-inf")
        self._lanes = lanes
        self._lane_trees: tuple[LaneTree, ...] = ()
        self._lanes_at = float("-inf")
        self.latest: TelemetrySample | None = None

    def _server_pids(self) -> tuple[int, ...]:
        ref = self._server()
        now = time.monotonic()
        if ref != self._tree_ref or now - self._tree_at >= self._tree_every:
            self._tree = tuple(sorted(server_tree_pids(*ref))) if ref else ()
            self._tree_ref, self._tree_at = ref, now
        return self._tree

    def _lane_pids(self) -> tuple[LaneTree, ...]:
        now = time.monotonic()
        if self._lanes is not None and now - self._lanes_at >= self._tree_every:
            self._lane_trees, self._lanes_at = tuple(self._lanes()), now
        return self._lane_trees

    def sample_blocking(self) -> TelemetrySample:
        pids = self._server_pids()
        gpu = self.gpu.sample(pids)
        sample = TelemetrySample(gpu=gpu, host=self.host.sample(pids), server_pids=pids,
                                 lanes=lane_shares(gpu, self._lane_pids()))
        self.history.add(sample)
        self.latest = sample
        return sample

    async def sample(self) -> TelemetrySample:
        return await asyncio.to_thread(self.sample_blocking)

    async def __aiter__(self) -> AsyncIterator[TelemetrySample]:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            yield await self.sample()
            next_at += self.interval
            delay = next_at - loop.time()
            if delay < 0:            # fell behind (slow NVML, loaded box): skip, do not burst
                next_at = loop.time()
                delay = 0
            await asyncio.sleep(delay)

    def close(self) -> None:
        self.gpu.close()

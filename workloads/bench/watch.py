"""What else happened on the server and its GPUs while a cell ran: honest cells.

``ContentionWatch`` marks a cell ``contended`` when the server served traffic that was not the
cell's: ``/v1/loads`` (SGLang's running and waiting requests, per data-parallel rank) read every
half second showed more requests than the cell had in flight (its own count includes requests that
ended in the last half second, so a request the server has not yet let go of is not taken for a
stranger's), or ``sglang:num_requests_total`` in ``/metrics`` (``--enable-metrics``) grew by more
than the cell's own requests. Either way the cell's figures were shared with someone else's load.

``GpuWatch`` records each local GPU's utilisation (mean and max) and memory in use (max) over the
cell from NVML (backends/machine/gpu.py), once a second, where there is a driver and the server is
on this machine; None otherwise.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import re
import socket
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import urlsplit

_REQUESTS = re.compile(r"^sglang:num_requests_total\{[^}\n]*\}[ \t]+(\S+)[ \t]*$", re.M)  # one line each
GRACE_S = 0.5
_MAX = 1 << 31


class InFlight:
    """The cell's own requests: how many are out now, counting those that ended in the last GRACE_S."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.out = 0
        self.finished = 0
        self._ended: deque[float] = deque()

    def enter(self) -> None:
        self.out += 1

    def leave(self) -> None:
        self.out -= 1
        self.finished += 1
        self._ended.append(self.clock())

    def own(self) -> int:
        now = self.clock()
        while self._ended and now - self._ended[0] > GRACE_S:
            self._ended.popleft()
        return self.out + len(self._ended)


def _count(value) -> int | None:
    """A request count a server sent: a whole, finite, sane number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value) if 0 <= value < _MAX and value == int(value) else None


def busy(loads: dict | None) -> int | None:
    """Running plus waiting requests over every rank of a ``/v1/loads`` answer; None when unreadable."""
    ranks = loads.get("loads") if isinstance(loads, dict) else None
    if not isinstance(ranks, list) or not ranks:
        return None
    total = 0
    for rank in ranks:
        if not isinstance(rank, dict):
            return None
        running, waiting = _count(rank.get("num_running_reqs")), _count(rank.get("num_waiting_reqs", 0))
        if running is None or waiting is None:
            return None
        total += running + waiting
    return total


def requests_total(metrics: str | None) -> float | None:
    """``sglang:num_requests_total`` summed over its series (streaming or not); None without it."""
    if not metrics:
        return None
    values = [n for v in _REQUESTS.findall(metrics) if (n := _count(_number(v))) is not None]
    return float(sum(values)) if values else None


def _number(text: str) -> float | None:
    """A sample's value as a float; None when it is not a number (a server's text is untrusted)."""
    try:
        return float(text)
    except ValueError:
        return None


class ContentionWatch:
    def __init__(self, client, flight: InFlight, interval_s: float = 0.5) -> None:
        self.client = client
        self.flight = flight
        self.interval_s = interval_s
        self.samples = 0
        self.foreign_samples = 0
        self.most_foreign = 0
        self._before: float | None = None
        self._task: asyncio.Task | None = None
        self._loads = True  # the server has /v1/loads (asked until it says otherwise)

    async def start(self) -> None:
        self._before = requests_total(await self.client.get_text("/metrics"))
        await self._sample()
        self._task = asyncio.ensure_future(self._run())

    async def _sample(self) -> None:
        if not self._loads:
            return
        try:
            answer = await self.client.get_json("/v1/loads")
        except Exception:  # noqa: BLE001 - a server without /v1/loads (or one that stopped) says nothing here
            answer = None
        seen = busy(answer)
        if seen is None:
            self._loads = self.samples > 0  # never answered: stop asking
            return
        self.samples += 1
        foreign = seen - self.flight.own()
        if foreign > 0:
            self.foreign_samples += 1
            self.most_foreign = max(self.most_foreign, foreign)

    async def _run(self) -> None:
        while self._loads:
            await asyncio.sleep(self.interval_s)
            await self._sample()

    async def stop(self) -> dict:
        """``{"contended", "note"}`` for the cell record."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._sample()
        after = requests_total(await self.client.get_text("/metrics"))
        extra = after - self._before - self.flight.finished if after is not None and self._before is not None \
            else None
        notes = []
        if self.foreign_samples:
            notes.append(f"/v1/loads showed up to {self.most_foreign} request(s) not ddtune's in "
                         f"{self.foreign_samples} of {self.samples} readings")
        if extra is not None and extra >= 1:
            notes.append(f"the server finished {extra:.0f} request(s) beyond the cell's own "
                         "(sglang:num_requests_total)")
        if not notes and not self.samples and extra is None:
            return {"contended": None, "note": "not known: the server has neither /v1/loads nor "
                                               "sglang:num_requests_total"}
        return {"contended": bool(notes), "note": "; ".join(notes) or None}


def is_local(url: str) -> bool:
    """The server runs on this machine (its GPUs are the ones NVML sees here)."""
    host = urlsplit(url).hostname or ""
    if host in ("localhost", socket.gethostname()):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class GpuWatch:
    """NVML readings over a cell, once a second, in a thread (NVML calls block)."""

    def __init__(self, sampler, interval_s: float = 1.0) -> None:
        self.sampler = sampler
        self.interval_s = interval_s
        self._snapshots: list = []
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._snapshots = []
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            snap = await asyncio.to_thread(self.sampler.sample)
            if not snap.available:
                return
            self._snapshots.append(snap)
            await asyncio.sleep(self.interval_s)

    async def stop(self) -> dict | None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        return summarize_gpus(self._snapshots)


def summarize_gpus(snapshots: list) -> dict | None:
    """Per device over the readings: utilisation mean and max (%), memory in use at most (MiB)."""
    if not snapshots:
        return None
    devices = []
    for index in sorted({d.index for s in snapshots for d in s.devices}):
        mine = [d for s in snapshots for d in s.devices if d.index == index]
        util = [d.util_gpu for d in mine if d.util_gpu is not None]
        mem = [d.memory_used for d in mine if d.memory_used is not None]
        devices.append({"index": index, "name": mine[0].name,
                        "util_mean": sum(util) / len(util) if util else None, "util_max": max(util, default=None),
                        "memory_used_max_mib": max(mem) / 2**20 if mem else None,
                        "memory_total_mib": mine[0].memory_total / 2**20 if mine[0].memory_total else None})
    return {"samples": len(snapshots), "devices": devices}

"""Between stopping the old server and launching the new one: wait until its port is free and its
pids hold no GPU memory, or fail naming what holds them. A port held by anything we did not stop is
refused at once with PortTaken (a lane server of a parallel sweep is named as such)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from backends.core.errors import PortTaken, ServerError
from backends.launch.process import port_owner, wait_port_free

PORT_RELEASE_S = 60.0   # how long a stopped server may keep its port before we give up
GPU_RELEASE_S = 60.0    # ... and its GPU memory


def gpu_holders(pids: set[int], sampler=None) -> tuple[set[int] | None, str]:
    """Which of pids hold GPU memory per NVML; (None, why) when that cannot be known here."""
    own = sampler is None
    if own:
        try:
            from backends.machine.gpu import GpuSampler
        except ImportError:
            return None, "the GPU sampler (backends.machine.gpu) is not installed"
        sampler = GpuSampler()
    try:
        snap = sampler.sample(pids)
    finally:
        if own:
            sampler.close()
    if not snap.available:
        return None, snap.reason or "NVML unavailable"
    # an old pid that exited but still holds memory is no longer visible here: match on pid alone
    holders = {p.pid for p in snap.processes if p.pid in pids and (p.used_bytes or 0) > 0}
    if not holders and snap.host_pids:
        return None, "NVML reports pids of another pid namespace"
    return holders, ""


async def wait_port_released(port: int, old_pids: set[int]) -> None:
    owner = await asyncio.to_thread(port_owner, port)
    if owner is None:
        return
    if owner.pid is None or owner.pid not in old_pids:
        from backends.server.lanes import lane_holding

        lane = await asyncio.to_thread(lane_holding, owner.pid)
        if lane is not None:
            raise PortTaken(f"refusing to start: port {port} is held by {lane.describe()} (a parallel sweep's)",
                            hint="`ddtune down` stops every lane server; or set a different [server] port",
                            port=port)
        raise PortTaken(f"refusing to start: {owner.describe()}, not a server ddtune started",
                        hint=f"stop that process, or set a different [server] port than {port}", port=port)
    owner = await asyncio.to_thread(wait_port_free, port, time.monotonic() + PORT_RELEASE_S)
    if owner is not None:
        raise ServerError(
            f"the old server still holds port {port} after {PORT_RELEASE_S:.0f} s: {owner.describe()}",
            hint=f"kill pid {owner.pid} and retry",
        )


async def wait_gpu_released(old_pids: set[int], timeout_s: float, sampler, on_note: Callable[[str], None],
                            on_wait: Callable[[set[int]], None]) -> None:
    """Poll NVML every 0.5 s until none of old_pids holds memory; say so and go on where NVML cannot tell."""
    if not old_pids:
        return
    deadline = time.monotonic() + timeout_s
    while True:
        holders, why = await asyncio.to_thread(gpu_holders, old_pids, sampler)
        if holders is None:
            on_note(f"not waiting for GPU memory release: {why}")
            return
        if not holders:
            return
        if time.monotonic() >= deadline:
            raise ServerError(
                f"old server pids {sorted(holders)} still hold GPU memory after {timeout_s:.0f} s",
                hint=f"kill them (kill -9 {' '.join(map(str, sorted(holders)))}) and retry",
            )
        on_wait(holders)
        await asyncio.sleep(0.5)

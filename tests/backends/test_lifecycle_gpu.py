"""The wait for the old server's GPU memory, through the gpu branch's sampler on a fake NVML."""

import asyncio
import os

import pytest

from backends.knobs.config import ServerConfig
from backends.core.errors import ServerError
from backends.machine.gpu import GpuSampler
from backends.server.release import gpu_holders
from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml
from tests.backends.lifecycle_support import headless

OLD = os.getpid()  # NVML pids must be processes of this namespace to count as visible


def sampler_with(gpu):
    return GpuSampler(nvml=make_fake_nvml([gpu]), holds_gpu=lambda pid: True)


def test_gpu_holders_reads_per_process_memory():
    gpu = FakeGpu(procs=[(OLD, 3 * GIB), (1, GIB)])
    holders, why = gpu_holders({OLD}, sampler_with(gpu))
    assert holders == {OLD} and why == ""


async def test_restart_waits_until_old_pids_release_gpu_memory(state_dir):
    gpu = FakeGpu(procs=[(OLD, 3 * GIB)])
    progress = []
    session = headless(ServerConfig(), gpu_sampler=sampler_with(gpu), phases=progress)
    session.tracker.begin_wait(0.0, "port")
    waiter = asyncio.create_task(session._wait_gpu({OLD}))
    for _ in range(600):
        if any(f"GPU memory of pids [{OLD}]" in p.detail for p in progress):
            break
        await asyncio.sleep(0.05)
    assert any(f"GPU memory of pids [{OLD}]" in p.detail for p in progress)
    assert not waiter.done()
    gpu.procs.clear()  # the old scheduler finally lets go
    await asyncio.wait_for(waiter, 30)


async def test_gpu_memory_never_released_fails_naming_the_pids(state_dir):
    session = headless(ServerConfig(), gpu_sampler=sampler_with(FakeGpu(procs=[(OLD, GIB)])))
    session.gpu_release_s = 0.5
    with pytest.raises(ServerError) as info:
        await session._wait_gpu({OLD})
    assert f"[{OLD}] still hold GPU memory" in info.value.message and f"kill -9 {OLD}" in info.value.hint


async def test_no_nvml_skips_the_wait_and_says_why(state_dir):
    notes = []
    broken = GpuSampler(nvml=make_fake_nvml([], init_error=None))
    session = headless(ServerConfig(), gpu_sampler=broken, notes=notes)
    await session._wait_gpu({OLD})
    assert notes and notes[0].startswith("not waiting for GPU memory release:")

"""TelemetryStream and History: bounded histories, configurable interval, sampling off the event loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from backends.core.errors import UsageError
from backends.machine.gpu import GpuSampler
from backends.server.telemetry import History, TelemetryStream
from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml


def fake_sampler(gpus, threads=None):
    nv = make_fake_nvml(gpus)
    if threads is not None:
        original = nv.nvmlDeviceGetMemoryInfo

        def recording(*args):
            threads.append(threading.get_ident())
            return original(*args)

        nv.nvmlDeviceGetMemoryInfo = recording
    return GpuSampler(nvml=nv, holds_gpu=lambda pid: True)


@pytest.fixture
def server():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


async def test_stream_samples_in_a_worker_thread_and_keeps_bounded_history(server):
    threads: list[int] = []
    gpus = [FakeGpu(used=GIB * (i + 1), procs=[(server.pid, 3 * GIB)]) for i in range(3)]
    stream = TelemetryStream(server=lambda: (server.pid, server.pid), interval=0.001, history=4,
                             gpu=fake_sampler(gpus, threads))
    seen = []
    async for sample in stream:
        seen.append(sample)
        if len(seen) == 6:
            break
    stream.close()
    assert threads and threading.get_ident() not in threads   # NVML never ran on the loop's thread
    assert len(stream.history) == 4                            # bounded
    assert sorted(stream.history.memory_used) == [0, 1, 2]
    assert all(len(series) == 4 for series in stream.history.memory_used.values())
    assert list(stream.history.memory_used[2]) == [3.0 * GIB] * 4
    assert list(stream.history.server_bytes) == [9.0 * GIB] * 4
    assert seen[-1].server_pids == (server.pid,)
    assert seen[-1].gpu.server_share.used_bytes == 9 * GIB
    assert stream.latest is seen[-1]


async def test_stream_without_driver_still_yields_host_data():
    stream = TelemetryStream(interval=0.001, gpu=GpuSampler(nvml=make_fake_nvml([])))
    sample = await stream.sample()
    assert sample.gpu.available is False and sample.host.ram_total > 0
    assert list(stream.history.server_bytes) == [0.0] and stream.history.memory_used == {}


def test_tree_follows_a_changed_server_reference(server):
    ref = [None]
    stream = TelemetryStream(server=lambda: ref[0], gpu=fake_sampler([FakeGpu()]), tree_every=3600)
    assert stream.sample_blocking().server_pids == ()
    ref[0] = (server.pid, None)
    assert stream.sample_blocking().server_pids == (server.pid,)


@pytest.mark.parametrize("kwargs", [{"interval": 0}, {"interval": -1.0}, {"history": 0}])
def test_bad_settings_are_usage_errors(kwargs):
    with pytest.raises(UsageError) as err:
        TelemetryStream(gpu=fake_sampler([FakeGpu()]), **kwargs)
    assert err.value.hint


def test_history_default_is_five_minutes_at_one_second():
    assert History().maxlen == 300

"""On a real NVIDIA GPU: a process that allocates 8 GiB with torch is attributed that memory by pid, and the
device totals agree with nvidia-smi. Skipped only where NVML cannot initialise (no driver)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from backends.machine.gpu import GpuSampler
from backends.machine.host import server_tree_pids

pytestmark = pytest.mark.gpu

GIB = 2**30
ALLOC = ("import torch; x = torch.empty(8 << 30, dtype=torch.uint8, device='cuda'); "
         "print('ready', flush=True); import time; time.sleep(60)")
# nvidia-smi and NVML read the same counters, but the two readings are taken at different instants
# while other processes (and the driver's own bookkeeping) may move memory. 512 MiB is far below the
# 8 GiB we allocate, and far above the few MiB a CUDA context or a rounding to MiB can account for.
TOLERANCE_MIB = 512


@pytest.fixture
def sampler():
    s = GpuSampler()
    snap = s.sample()
    if not snap.available:
        pytest.skip(f"no usable NVIDIA GPU: {snap.reason}")
    yield s
    s.close()


@pytest.fixture
def allocator():
    python = os.environ.get("DDTUNE_TORCH_PYTHON", shutil.which("python3") or sys.executable)
    proc = subprocess.Popen([python, "-c", ALLOC], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()   # blocks until 'ready' or the child dies (EOF)
        if line.strip() != "ready":
            proc.wait(timeout=30)
            pytest.fail(f"allocator did not start: {line!r} {proc.stderr.read()[-2000:]}")
        yield proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)


def smi_totals() -> list[tuple[int, int]]:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [tuple(int(x) for x in line.split(",")) for line in out.strip().splitlines()]


def test_torch_allocation_is_attributed_to_its_pid(sampler, allocator):
    tree = server_tree_pids(allocator.pid, os.getpgid(allocator.pid))
    assert allocator.pid in tree
    snap = sampler.sample(tree)
    print("warnings:", snap.warnings, "hint:", snap.hint)
    for p in snap.processes:
        print("process:", p)
    mine = [p for p in snap.processes if p.pid == allocator.pid]
    assert mine, f"NVML did not list pid {allocator.pid}: {snap.processes} {snap.warnings}"
    assert max(p.used_bytes or 0 for p in mine) >= 8 * GIB
    assert snap.server_share is not None and allocator.pid in snap.server_share.pids
    assert snap.server_share.used_bytes >= 8 * GIB
    print(snap.server_share.summary())


def test_device_totals_agree_with_nvidia_smi(sampler, allocator):
    snap = sampler.sample()
    smi = smi_totals()
    assert len(smi) == len(snap.devices)
    for dev, (used_mib, total_mib) in zip(snap.devices, smi, strict=True):
        print(f"GPU {dev.index}: ddtune {dev.memory_used / 2**20:.0f}/{dev.memory_total / 2**20:.0f} MiB, "
              f"nvidia-smi {used_mib}/{total_mib} MiB")
        assert abs(dev.memory_total / 2**20 - total_mib) <= 1
        assert abs(dev.memory_used / 2**20 - used_mib) <= TOLERANCE_MIB
    assert max(d.memory_used for d in snap.devices) >= 8 * GIB

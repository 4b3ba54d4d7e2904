"""GpuSampler against a fake pynvml: every way NVML can be missing or partial, and attribution of GPU
memory to a real process tree."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from backends.machine.gpu import HOST_PID_HINT, NO_DRIVER_HINT, GpuSampler
from backends.machine.host import server_tree_pids
from tests.fake_nvml import (
    GIB, FakeGpu, NVMLError_DriverNotLoaded, NVMLError_LibraryNotFound, NVMLError_NoPermission, make_fake_nvml,
)

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
# A server with two ranks: the root spawns one child that prints its pid, then both sleep.
SERVER = [sys.executable, "-c",
          "import subprocess, sys, time\n"
          "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
          "print(c.pid, flush=True)\n"
          "time.sleep(60)\n"]


def always(pid):
    return True


def unused_pid() -> int:
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def test_missing_library_is_unavailable_not_a_crash(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)   # makes 'import pynvml' raise ImportError
    snap = GpuSampler().sample([1, 2])
    assert snap.available is False
    assert "nvidia-ml-py" in snap.reason
    assert "pip install nvidia-ml-py" in snap.hint
    assert snap.devices == () and snap.server_share is None


def test_no_driver_library_says_so_and_is_cached():
    nv = make_fake_nvml([FakeGpu()], init_error=NVMLError_LibraryNotFound)
    sampler = GpuSampler(nvml=nv)
    first = sampler.sample()
    calls = nv.calls
    second = sampler.sample()
    assert first.available is False
    assert first.reason == "no NVIDIA driver found (libnvidia-ml.so.1 not loadable)"
    assert first.hint == NO_DRIVER_HINT
    assert second == first and nv.calls == calls   # no NVML calls once known absent


@pytest.mark.parametrize("error, words", [(NVMLError_DriverNotLoaded, "driver is not loaded"),
                                          (NVMLError_NoPermission, "permission")])
def test_init_errors_are_typed(error, words):
    snap = GpuSampler(nvml=make_fake_nvml([FakeGpu()], init_error=error)).sample()
    assert snap.available is False and words in snap.reason and snap.hint


def test_zero_devices_is_unavailable_with_hint():
    snap = GpuSampler(nvml=make_fake_nvml([])).sample()
    assert snap.available is False
    assert "0 GPUs" in snap.reason
    assert "CUDA_VISIBLE_DEVICES" in snap.hint


def test_device_fields_are_read_and_scaled():
    snap = GpuSampler(nvml=make_fake_nvml([FakeGpu(used=20 * GIB, total=141 * GIB)])).sample()
    (dev,) = snap.devices
    assert snap.available and snap.driver_version == "580.159.03"
    assert (dev.index, dev.name, dev.uuid) == (0, "NVIDIA H200", "GPU-fake-0")
    assert (dev.memory_used, dev.memory_total) == (20 * GIB, 141 * GIB)
    assert (dev.util_gpu, dev.util_memory, dev.temperature_c, dev.sm_clock_mhz) == (37, 12, 41, 1980)
    assert (dev.power_w, dev.power_limit_w) == (312.0, 700.0)
    assert dev.unsupported == ()


def test_not_supported_functions_leave_none_and_the_rest():
    nv = make_fake_nvml([FakeGpu(), FakeGpu()],
                        unsupported={"nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo",
                                     "nvmlDeviceGetComputeRunningProcesses"})
    snap = GpuSampler(nvml=nv).sample()
    assert snap.available and len(snap.devices) == 2
    for dev in snap.devices:
        assert dev.power_w is None and dev.sm_clock_mhz is None
        assert set(dev.unsupported) == {"power", "sm_clock"}
        assert dev.memory_used == 10 * GIB and dev.temperature_c == 41
    assert any("cannot list its processes" in w for w in snap.warnings)


def test_lost_device_is_a_warning_not_a_failure():
    snap = GpuSampler(nvml=make_fake_nvml([FakeGpu(), FakeGpu(used=5 * GIB)], lost={0})).sample()
    assert snap.available
    assert snap.devices[0].memory_used is None and snap.devices[0].unsupported == ("handle",)
    assert snap.devices[1].memory_used == 5 * GIB
    assert any("GPU 0" in w for w in snap.warnings)


def test_eight_devices_attributed_to_the_server_tree(spawn):
    server = spawn(SERVER)
    child = int(server.stdout.readline())
    other = spawn(SLEEPER)
    gpus = [FakeGpu(used=(20 + i) * GIB, procs=[(server.pid if i % 2 else child, 9 * GIB), (other.pid, GIB)])
            for i in range(8)]
    tree = server_tree_pids(server.pid)
    assert {server.pid, child} <= tree and other.pid not in tree
    snap = GpuSampler(nvml=make_fake_nvml(gpus), holds_gpu=always).sample(tree)
    assert len(snap.devices) == 8 and len(snap.processes) == 16
    assert snap.memory_used == sum((20 + i) * GIB for i in range(8))
    share = snap.server_share
    assert share.used_bytes == 8 * 9 * GIB
    assert share.device_indices == tuple(range(8))
    assert share.pids == tuple(sorted((server.pid, child)))
    assert share.summary() == f"server: 72.0 GiB on 8 GPUs, pids {', '.join(map(str, share.pids))}"
    tagged = {(p.pid, p.is_server) for p in snap.processes}
    assert (other.pid, False) in tagged and (child, True) in tagged
    assert all(p.name and p.name.startswith("python") for p in snap.processes)
    assert snap.host_pids is False and snap.warnings == ()


def test_unavailable_process_memory_is_none_and_named(spawn):
    server = spawn(SLEEPER)
    gpus = [FakeGpu(procs=[(server.pid, None)]), FakeGpu(procs=[(server.pid, 2**64 - 1)])]
    snap = GpuSampler(nvml=make_fake_nvml(gpus), holds_gpu=always).sample({server.pid})
    assert [p.used_bytes for p in snap.processes] == [None, None]
    assert snap.server_share.used_bytes == 0
    assert snap.server_share.unknown_pids == (server.pid,)
    assert "memory not reported" in snap.server_share.summary()


def test_compute_and_graphics_entries_merge(spawn):
    proc = spawn(SLEEPER)
    gpu = FakeGpu(procs=[(proc.pid, 3 * GIB)], graphics=[(proc.pid, 1 * GIB)])
    (entry,) = GpuSampler(nvml=make_fake_nvml([gpu]), holds_gpu=always).sample().processes
    assert entry.kind == "C+G" and entry.used_bytes == 3 * GIB


def test_host_pids_from_a_container_switch_attribution_off():
    ghost_a, ghost_b = unused_pid(), unused_pid() - 7
    gpus = [FakeGpu(procs=[(ghost_a, 9 * GIB)]), FakeGpu(procs=[(ghost_b, 9 * GIB)])]
    snap = GpuSampler(nvml=make_fake_nvml(gpus)).sample({ghost_a})
    assert snap.available and len(snap.devices) == 2 and snap.memory_used == 20 * GIB
    assert snap.host_pids is True
    assert snap.server_share is None
    assert snap.hint == HOST_PID_HINT and "--pid=host" in snap.hint
    assert all(not p.visible and p.name is None and not p.is_server for p in snap.processes)


def test_pids_of_unrelated_processes_count_as_host_pids(spawn):
    # NVML names a pid that exists here but holds no /dev/nvidia* file: a host pid that collides.
    bystander = spawn(SLEEPER)
    snap = GpuSampler(nvml=make_fake_nvml([FakeGpu(procs=[(bystander.pid, 9 * GIB)])])).sample({bystander.pid})
    assert snap.host_pids is True and snap.server_share is None
    assert snap.processes[0].is_server is False


def test_one_vanished_pid_is_a_warning_only(spawn):
    server = spawn(SLEEPER)
    ghost = unused_pid()
    gpus = [FakeGpu(procs=[(server.pid, 4 * GIB), (ghost, GIB)])]
    snap = GpuSampler(nvml=make_fake_nvml(gpus), holds_gpu=always).sample({server.pid})
    assert snap.host_pids is False
    assert snap.server_share.used_bytes == 4 * GIB
    assert any(str(ghost) in w for w in snap.warnings)


def test_close_shuts_nvml_down_and_sampling_again_reinitialises():
    nv = make_fake_nvml([FakeGpu()])
    sampler = GpuSampler(nvml=nv)
    assert sampler.sample().available
    sampler.close()
    assert nv.shutdowns == 1
    assert sampler.sample().available


def test_import_without_pynvml_installed():
    code = ("import sys; sys.modules['pynvml'] = None\n"
            "import backends.machine.gpu, backends.server.telemetry\n"
            "s = backends.machine.gpu.GpuSampler().sample()\n"
            "print(s.available, s.reason)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("False the Python package nvidia-ml-py")


def test_each_process_has_its_user_command_and_sm_utilisation(spawn):
    """Issue 32: a process table like nvitop's (pid, user, GPU memory, utilisation, command)."""
    import getpass

    server = spawn(SLEEPER)
    other = spawn([sys.executable, "-c", "import time; time.sleep(60)", "--tag", "x\x1b[31my"])
    gpus = [FakeGpu(procs=[(server.pid, 9 * GIB), (other.pid, GIB)], proc_util=[(server.pid, 71), (other.pid, 3)]),
            FakeGpu(procs=[(server.pid, 2 * GIB)])]  # no per-process sample on GPU 1
    snap = GpuSampler(nvml=make_fake_nvml(gpus), holds_gpu=always).sample({server.pid})
    rows = {(p.pid, p.device_index): p for p in snap.processes}
    mine = rows[(server.pid, 0)]
    assert (mine.sm_util, mine.user, mine.is_server) == (71, getpass.getuser(), True)
    assert mine.command == " ".join(SLEEPER)
    assert rows[(other.pid, 0)].sm_util == 3 and rows[(server.pid, 1)].sm_util is None
    assert "\x1b" not in rows[(other.pid, 0)].command and rows[(other.pid, 0)].command.endswith("--tag xy")
    ghost = unused_pid()
    snap = GpuSampler(nvml=make_fake_nvml([FakeGpu(procs=[(server.pid, GIB), (ghost, GIB)])]),
                      holds_gpu=always).sample()
    hidden = next(p for p in snap.processes if p.pid == ghost)
    assert (hidden.visible, hidden.user, hidden.command) == (False, None, None)

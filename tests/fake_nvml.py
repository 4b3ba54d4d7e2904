"""A fake ``pynvml`` module: the functions and error classes GpuSampler calls, driven by plain data.

    nv = make_fake_nvml(devices=[FakeGpu(used=..., procs=[(pid, bytes)])], unsupported={"nvmlDeviceGetPowerUsage"})
    GpuSampler(nvml=nv)
"""

from __future__ import annotations

import types
from collections.abc import Set as AbstractSet
from typing import Any
from dataclasses import dataclass, field

GIB = 2**30


class NVMLError(Exception):
    def __init__(self, value: int = 999) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's spelling
    def __init__(self) -> None:
        super().__init__(3)


class NVMLError_NoPermission(NVMLError):  # noqa: N801
    def __init__(self) -> None:
        super().__init__(4)


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    def __init__(self) -> None:
        super().__init__(9)


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    def __init__(self) -> None:
        super().__init__(12)


class NVMLError_GpuIsLost(NVMLError):  # noqa: N801
    def __init__(self) -> None:
        super().__init__(15)


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    used: int = 10 * GIB
    total: int = 141 * GIB
    util: int = 37
    mem_util: int = 12
    power_mw: int = 312_000
    limit_mw: int = 700_000
    temp: int = 41
    sm_clock: int = 1980
    procs: list[tuple[int, int | None]] = field(default_factory=list)       # compute (pid, bytes)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)
    proc_util: list[tuple[int, int]] = field(default_factory=list)   # (pid, SM %) samples, as NVML keeps them


def make_fake_nvml(devices: list[FakeGpu] | None = None, init_error: type[NVMLError] | None = None,
                   unsupported: AbstractSet[str] = frozenset(),
                   lost: AbstractSet[int] = frozenset()) -> types.ModuleType:
    """``unsupported``: NVML function names that raise NotSupported; ``lost``: indices without a handle."""
    devices = list(devices or [])
    nv: Any = types.ModuleType("pynvml")  # a stand-in module: its attributes are set below
    nv.calls = 0
    nv.shutdowns = 0
    for cls in (NVMLError, NVMLError_NotSupported, NVMLError_NoPermission, NVMLError_DriverNotLoaded,
                NVMLError_LibraryNotFound, NVMLError_GpuIsLost):
        setattr(nv, cls.__name__, cls)
    nv.NVML_TEMPERATURE_GPU = 0
    nv.NVML_CLOCK_SM = 1

    def api(fn):
        def wrapper(*args):
            nv.calls += 1
            if fn.__name__ in unsupported:
                raise NVMLError_NotSupported()
            return fn(*args)
        wrapper.__name__ = fn.__name__
        setattr(nv, fn.__name__, wrapper)
        return wrapper

    @api
    def nvmlInit():
        if init_error is not None:
            raise init_error()

    @api
    def nvmlShutdown():
        nv.shutdowns += 1

    @api
    def nvmlDeviceGetCount():
        return len(devices)

    @api
    def nvmlSystemGetDriverVersion():
        return "580.159.03"

    @api
    def nvmlDeviceGetHandleByIndex(index):
        if index in lost:
            raise NVMLError_GpuIsLost()
        return devices[index]

    @api
    def nvmlDeviceGetName(h):
        return h.name

    @api
    def nvmlDeviceGetUUID(h):
        return f"GPU-fake-{devices.index(h)}"

    @api
    def nvmlDeviceGetMemoryInfo(h):
        return types.SimpleNamespace(used=h.used, total=h.total, free=h.total - h.used)

    @api
    def nvmlDeviceGetUtilizationRates(h):
        return types.SimpleNamespace(gpu=h.util, memory=h.mem_util)

    @api
    def nvmlDeviceGetPowerUsage(h):
        return h.power_mw

    @api
    def nvmlDeviceGetEnforcedPowerLimit(h):
        return h.limit_mw

    @api
    def nvmlDeviceGetTemperature(h, sensor):
        assert sensor == 0
        return h.temp

    @api
    def nvmlDeviceGetClockInfo(h, clock):
        assert clock == 1
        return h.sm_clock

    def procs(items):
        # pynvml maps NVML_VALUE_NOT_AVAILABLE to None itself; older builds pass the raw 2**64-1 through.
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in items]

    @api
    def nvmlDeviceGetComputeRunningProcesses(h):
        return procs(h.procs)

    @api
    def nvmlDeviceGetGraphicsRunningProcesses(h):
        return procs(h.graphics)

    @api
    def nvmlDeviceGetProcessUtilization(h, since_us):
        if not h.proc_util:  # pynvml raises when the driver holds no sample (NVML_ERROR_NOT_FOUND)
            raise NVMLError(6)
        return [types.SimpleNamespace(pid=pid, timeStamp=since_us + 1 + i, smUtil=sm, memUtil=0)
                for i, (pid, sm) in enumerate(h.proc_util)]

    return nv

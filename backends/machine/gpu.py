"""NVML sampler: per-device memory, utilisation, power, temperature and clock, plus per-process GPU memory
attributed to the managed server.

``pynvml`` (nvidia-ml-py) is imported lazily inside the sampler, so ``import backends.machine.gpu`` never fails
where the library or the driver is missing. Every way NVML can be absent or partial (no library, no
driver, no devices, a function not supported, a container whose NVML reports host pids) ends in a
snapshot that says so with a reason and a hint, never in an exception.

The sampler's calls block (each NVML call takes microseconds to milliseconds); async callers go through
``asyncio.to_thread`` (see ``backends.server.telemetry``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from backends.machine.gpuprocs import holds_nvidia_device, process_name, process_utilization, start_ticks, \
    user_and_command

NO_DRIVER_HINT = "GPU telemetry unavailable; everything else in ddtune works"
HOST_PID_HINT = ("NVML reports process ids from another pid namespace (a container without the host's pids): "
                 "run the container with --pid=host (docker/podman) so ddtune can attribute GPU memory to the server")


@dataclass(frozen=True)
class GpuDevice:
    """One GPU at one instant. Fields NVML could not read are None and named in ``unsupported``."""

    index: int
    name: str
    uuid: str | None
    memory_used: int | None      # bytes
    memory_total: int | None     # bytes
    util_gpu: int | None         # percent
    util_memory: int | None      # percent
    power_w: float | None
    power_limit_w: float | None
    temperature_c: int | None
    sm_clock_mhz: int | None
    unsupported: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on one GPU (a process on two GPUs appears twice)."""

    pid: int
    device_index: int
    used_bytes: int | None       # None when NVML cannot say (NVML_VALUE_NOT_AVAILABLE)
    kind: str                    # "C" compute, "G" graphics, "C+G" both
    name: str | None             # None when the pid is not visible in our pid namespace
    visible: bool                # the pid exists here and (where we can tell) holds an NVIDIA device
    is_server: bool
    sm_util: int | None = None   # its share of this GPU's SM time lately (percent); None: NVML has no sample
    user: str | None = None      # its user (visible processes only)
    command: str | None = None   # its command line, plain and cut (backends.machine.gpuprocs)


@dataclass(frozen=True)
class ServerShare:
    """The managed server's part of GPU memory: every process of its tree, every rank."""

    used_bytes: int
    device_indices: tuple[int, ...]
    pids: tuple[int, ...]
    unknown_pids: tuple[int, ...] = ()   # server processes on a GPU whose memory NVML did not report

    def summary(self) -> str:
        gib = self.used_bytes / 2**30
        gpus = len(self.device_indices)
        pids = ", ".join(str(p) for p in self.pids) or "none"
        text = f"server: {gib:.1f} GiB on {gpus} GPU{'s' if gpus != 1 else ''}, pids {pids}"
        if self.unknown_pids:
            text += f" (memory not reported for {', '.join(str(p) for p in self.unknown_pids)})"
        return text


@dataclass(frozen=True)
class GpuSnapshot:
    """Everything one ``GpuSampler.sample`` call learned. ``available`` False means no devices could be read;
    ``reason`` says why and ``hint`` what to do. ``warnings`` carry partial failures (host pids, one GPU lost)."""

    available: bool
    reason: str | None = None
    hint: str | None = None
    timestamp: float = 0.0
    driver_version: str | None = None
    devices: tuple[GpuDevice, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    server_share: ServerShare | None = None
    host_pids: bool = False              # NVML's pids are not ours: attribution switched off
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def plainly_unavailable(self) -> bool:
        """Unavailable for a reason that needs no fix from ddtune's side (no driver, NVML not loadable):
        the hint only says that everything else works, so a reader can print both on one line."""
        return not self.available and self.hint == NO_DRIVER_HINT

    @property
    def memory_used(self) -> int:
        return sum(d.memory_used or 0 for d in self.devices)

    @property
    def memory_total(self) -> int:
        return sum(d.memory_total or 0 for d in self.devices)


def unavailable(reason: str, hint: str | None = NO_DRIVER_HINT) -> GpuSnapshot:
    return GpuSnapshot(available=False, reason=reason, hint=hint, timestamp=time.time())


def _decode(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class GpuSampler:
    """Reads NVML. ``nvml`` injects a module with pynvml's interface (tests use a fake); ``holds_gpu``
    tells whether a visible pid really uses a GPU (default: looks for /dev/nvidia* among its open files)."""

    def __init__(self, nvml: ModuleType | None = None,
                 holds_gpu: Callable[[int], bool | None] = holds_nvidia_device) -> None:
        self._nvml = nvml
        self._holds_gpu = holds_gpu
        self._lock = threading.Lock()
        self._initialised = False
        self._failure: GpuSnapshot | None = None
        self._handles: list[Any] = []
        self._static: list[tuple[str, str | None]] = []   # (name, uuid) per device, read once
        self._driver: str | None = None
        self._mem_v2: bool | None = None
        self._pid_verdicts: dict[tuple[int, str], str | Literal[False]] = {}
        self._pid_info: dict[tuple[int, str], tuple[str | None, str | None]] = {}  # (user, command)

    @property
    def _nv(self) -> ModuleType:
        """The NVML module, once ``_load`` has found it (every reader runs after a successful load)."""
        assert self._nvml is not None, "NVML read before it was loaded"
        return self._nvml

    # -- set-up ----------------------------------------------------------------------------------
    def _load(self) -> GpuSnapshot | None:
        if self._nvml is None:
            try:
                import pynvml  # noqa: PLC0415 - lazy on purpose
            except ImportError:
                return unavailable("the Python package nvidia-ml-py (module pynvml) is not installed",
                                   "pip install nvidia-ml-py; " + NO_DRIVER_HINT)
            self._nvml = pynvml
        nv = self._nvml
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            return self._init_failure(exc)
        except OSError as exc:
            return unavailable(f"NVML could not be loaded: {exc}")
        self._initialised = True
        try:
            count = nv.nvmlDeviceGetCount()
        except nv.NVMLError as exc:
            return unavailable(f"NVML could not count GPUs: {exc}")
        if count == 0:
            return unavailable("the NVIDIA driver is loaded but reports 0 GPUs",
                               "check CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES and that the container was "
                               "started with GPUs (--gpus all); " + NO_DRIVER_HINT)
        try:
            self._driver = _decode(nv.nvmlSystemGetDriverVersion())
        except nv.NVMLError:
            self._driver = None
        for index in range(count):
            try:
                handle = nv.nvmlDeviceGetHandleByIndex(index)
            except nv.NVMLError:
                handle = None
            self._handles.append(handle)
            name, uuid = f"GPU {index}", None
            if handle is not None:
                name = _decode(self._try(nv.nvmlDeviceGetName, handle) or name)
                raw = self._try(nv.nvmlDeviceGetUUID, handle)
                uuid = _decode(raw) if raw is not None else None
            self._static.append((name, uuid))
        return None

    def _init_failure(self, exc: Exception) -> GpuSnapshot:
        nv = self._nv
        if isinstance(exc, getattr(nv, "NVMLError_LibraryNotFound", ())):
            return unavailable("no NVIDIA driver found (libnvidia-ml.so.1 not loadable)")
        if isinstance(exc, getattr(nv, "NVMLError_DriverNotLoaded", ())):
            return unavailable("the NVIDIA kernel driver is not loaded (NVML: driver not loaded)",
                               "check 'nvidia-smi' and 'lsmod | grep nvidia'; " + NO_DRIVER_HINT)
        if isinstance(exc, getattr(nv, "NVMLError_NoPermission", ())):
            return unavailable("no permission to open the NVIDIA devices (NVML: insufficient permissions)",
                               "add your user to the group owning /dev/nvidia*; " + NO_DRIVER_HINT)
        return unavailable(f"NVML failed to initialise: {exc}")

    def _try(self, fn: Callable[..., Any], *args: Any, missing: list[str] | None = None,
             label: str = "") -> Any:
        try:
            return fn(*args)
        except self._nv.NVMLError:
            if missing is not None:
                missing.append(label)
            return None

    # -- sampling --------------------------------------------------------------------------------
    def sample(self, server_pids: Collection[int] = ()) -> GpuSnapshot:
        """One reading of every device and every GPU process. Never raises for NVML trouble."""
        with self._lock:
            if self._failure is not None:
                return self._failure
            if not self._initialised or not self._handles:
                failure = self._load()
                if failure is not None:
                    self._failure = failure
                    return failure
            return self._read(frozenset(server_pids))

    def _read(self, server_pids: frozenset[int]) -> GpuSnapshot:
        nv = self._nv
        now = time.time()
        devices: list[GpuDevice] = []
        raw_procs: dict[tuple[int, int], list[Any]] = {}   # (pid, device) -> [bytes|None, kinds]
        utils: dict[tuple[int, int], int] = {}              # (pid, device) -> SM %
        warnings: list[str] = []
        for index, handle in enumerate(self._handles):
            name, uuid = self._static[index]
            if handle is None:
                warnings.append(f"GPU {index}: NVML gave no handle (lost or inaccessible)")
                devices.append(GpuDevice(index, name, uuid, None, None, None, None, None, None, None, None,
                                         unsupported=("handle",)))
                continue
            devices.append(self._read_device(index, handle, name, uuid))
            utils.update({(pid, index): util for pid, util in process_utilization(nv, handle).items()})
            for kind, fn_name in (("C", "nvmlDeviceGetComputeRunningProcesses"),
                                  ("G", "nvmlDeviceGetGraphicsRunningProcesses")):
                fn = getattr(nv, fn_name, None)
                procs = self._try(fn, handle) if fn is not None else None
                if procs is None and kind == "C":
                    warnings.append(f"GPU {index}: NVML cannot list its processes (not supported here)")
                for proc in procs or ():
                    used = getattr(proc, "usedGpuMemory", None)
                    if used is not None and used >= 2**64 - 1:   # NVML_VALUE_NOT_AVAILABLE
                        used = None
                    entry = raw_procs.setdefault((int(proc.pid), index), [None, ""])
                    if used is not None:
                        entry[0] = max(entry[0] or 0, int(used))
                    entry[1] = "C+G" if entry[1] and entry[1] != kind else kind
        processes, host_pids, proc_warnings = self._attribute(raw_procs, server_pids, utils)
        warnings.extend(proc_warnings)
        share = None if host_pids or not server_pids else self._share(processes)
        return GpuSnapshot(
            available=True, timestamp=now, driver_version=self._driver, devices=tuple(devices),
            processes=processes, server_share=share, host_pids=host_pids,
            hint=HOST_PID_HINT if host_pids else None, warnings=tuple(warnings),
        )

    def _read_device(self, index: int, handle: Any, name: str, uuid: str | None) -> GpuDevice:
        nv = self._nv
        missing: list[str] = []
        mem = self._memory(handle, missing)
        util = self._try(nv.nvmlDeviceGetUtilizationRates, handle, missing=missing, label="utilization")
        power = self._try(nv.nvmlDeviceGetPowerUsage, handle, missing=missing, label="power")
        limit = self._try(nv.nvmlDeviceGetEnforcedPowerLimit, handle, missing=missing, label="power_limit")
        temp = self._try(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU,
                         missing=missing, label="temperature")
        clock = self._try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM, missing=missing, label="sm_clock")
        return GpuDevice(
            index=index, name=name, uuid=uuid,
            memory_used=int(mem.used) if mem is not None else None,
            memory_total=int(mem.total) if mem is not None else None,
            util_gpu=int(util.gpu) if util is not None else None,
            util_memory=int(util.memory) if util is not None else None,
            power_w=power / 1000.0 if power is not None else None,
            power_limit_w=limit / 1000.0 if limit is not None else None,
            temperature_c=int(temp) if temp is not None else None,
            sm_clock_mhz=int(clock) if clock is not None else None,
            unsupported=tuple(missing),
        )

    def _memory(self, handle: Any, missing: list[str]) -> Any:
        """Memory info v2 where the driver has it: its 'used' leaves out driver-reserved memory, as
        nvidia-smi does; v1 (used = total - free) otherwise."""
        nv = self._nv
        version = getattr(nv, "nvmlMemory_v2", None)
        if version is not None and self._mem_v2 is not False:
            try:
                mem = nv.nvmlDeviceGetMemoryInfo(handle, version)
                self._mem_v2 = True
                return mem
            except (nv.NVMLError, TypeError):
                if self._mem_v2 is None:
                    self._mem_v2 = False
        return self._try(nv.nvmlDeviceGetMemoryInfo, handle, missing=missing, label="memory")

    def _visible(self, pid: int) -> str | Literal[False]:
        """False when the pid NVML reports is not a process of our namespace that uses a GPU; else its
        name (None if unreadable). Cached per (pid, start time), so a reused pid is judged afresh."""
        start = start_ticks(pid)
        if start is None:
            return False
        key = (pid, start)
        if key not in self._pid_verdicts:
            if len(self._pid_verdicts) > 4096:
                self._pid_verdicts.clear()
                self._pid_info.clear()
            holds = self._holds_gpu(pid)
            self._pid_verdicts[key] = False if holds is False else (process_name(pid) or "")
            if holds is not False:
                self._pid_info[key] = user_and_command(pid)
        return self._pid_verdicts[key]

    def _info(self, pid: int) -> tuple[str | None, str | None]:
        """(user, command) of a visible pid, as read when it was first seen."""
        start = start_ticks(pid)
        return self._pid_info.get((pid, start), (None, None)) if start is not None else (None, None)

    def _attribute(self, raw: dict[tuple[int, int], list[Any]], server_pids: frozenset[int],
                   utils: dict[tuple[int, int], int]) -> tuple[tuple[GpuProcess, ...], bool, list[str]]:
        names = {pid: self._visible(pid) for pid in {pid for pid, _ in raw}}
        visible = {pid: name is not False for pid, name in names.items()}
        host_pids = bool(visible) and not any(visible.values())
        warnings: list[str] = []
        hidden = sorted(pid for pid, ok in visible.items() if not ok)
        if host_pids:
            warnings.append(f"none of the {len(visible)} GPU process ids NVML reports is a process here "
                            "(container with its own pid namespace?): per-process attribution is off")
        elif hidden:
            warnings.append("GPU process ids not visible here (exited, or from another pid namespace): "
                            + ", ".join(str(p) for p in hidden))
        info = {pid: self._info(pid) if ok else (None, None) for pid, ok in visible.items()}
        processes = tuple(
            GpuProcess(pid=pid, device_index=dev, used_bytes=used, kind=kind,
                       name=names[pid] or None, visible=visible[pid],
                       is_server=visible[pid] and not host_pids and pid in server_pids,
                       sm_util=utils.get((pid, dev)), user=info[pid][0], command=info[pid][1])
            for (pid, dev), (used, kind) in sorted(raw.items(), key=lambda item: (item[0][1], item[0][0]))
        )
        return processes, host_pids, warnings

    @staticmethod
    def _share(processes: tuple[GpuProcess, ...]) -> ServerShare:
        mine = [p for p in processes if p.is_server]
        return ServerShare(
            used_bytes=sum(p.used_bytes or 0 for p in mine),
            device_indices=tuple(sorted({p.device_index for p in mine})),
            pids=tuple(sorted({p.pid for p in mine})),
            unknown_pids=tuple(sorted({p.pid for p in mine if p.used_bytes is None})),
        )

    def close(self) -> None:
        with self._lock:
            if self._initialised and self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # noqa: BLE001 - shutting down is best effort
                    pass
            self._initialised = False
            self._handles.clear()
            self._static.clear()

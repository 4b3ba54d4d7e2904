"""Plain view models the screens hand to widgets. Built from engine objects by tui/adapters.py."""

from __future__ import annotations

from dataclasses import dataclass

from backends.core import Phase


@dataclass(frozen=True)
class KnobRow:
    name: str
    requested: str
    effective: str | None  # None: the server has not said (yet)
    verified: bool | None  # None: unknown, True: matches, False: mismatch


@dataclass(frozen=True)
class ServerView:
    backend: str = "sim"
    simulated: bool = True
    attached: bool = False         # ddtune attaches to someone else's server (no start of its own to time)
    pid: int | None = None
    url: str = ""
    version: str | None = None
    engine: str = "sglang"         # what ``version`` is a version of, as the panel shows it ("llama.cpp")
    uptime_s: float | None = None
    phase: Phase = Phase.IDLE
    detail: str = ""
    progress: float | None = None  # 0..1 within the phase, when known
    elapsed_s: float | None = None
    eta_s: float | None = None
    knobs: tuple[KnobRow, ...] = ()
    fatal: str | None = None
    note: str | None = None
    alarm: str | None = None       # a guard that tripped (acceptance collapse), shown loudly


@dataclass(frozen=True)
class GpuRow:
    index: int
    name: str
    used_gib: float
    total_gib: float
    server_gib: float
    util: int | None
    power_w: float | None
    power_limit_w: float | None
    temp_c: int | None
    util_history: tuple[int, ...] = ()
    lane_gib: float = 0.0          # held by the servers of a parallel sweep's or search's lanes


@dataclass(frozen=True)
class GpuProcRow:
    """One process on one GPU, as the GPU detail lists it (nvitop's process table)."""

    gpu: int
    pid: int
    user: str                      # "?" where it cannot be read (another pid namespace, exited)
    mem_gib: float | None          # None: NVML did not say
    util: int | None               # its share of the GPU's SM time lately (percent); None: no sample
    command: str
    owner: str = ""                # "server" (the console's), a lane's label, or "" (someone else's)


@dataclass(frozen=True)
class GpuView:
    available: bool
    reason: str | None = None
    rows: tuple[GpuRow, ...] = ()
    server_summary: str | None = None
    host: str | None = None
    lanes: tuple[str, ...] = ()    # one line per lane server: its pid and memory on which GPUs
    processes: tuple[GpuProcRow, ...] = ()  # every GPU process, by GPU then memory (the GPU detail's table)

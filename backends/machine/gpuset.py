"""Which GPUs a parallel sweep may use, how they split into one set per server, and what each GPU is.

``--gpus 0,1,2,3`` names them (CUDA indices in PCI bus order, as ``nvidia-smi`` numbers them; the
lanes set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so CUDA agrees). Without it every GPU NVML sees is used
unless a foreign process holds memory on it: any process that is not a server of this state dir's
own lanes (those are ours to restart). With no NVML (the simulator, a box without the driver)
``--gpus`` is required: nothing here can tell which GPUs exist.

Fairness needs to know what each GPU is: ``GpuIdentity`` keeps index, UUID, model, memory, power
limit and the top SM clock, and ``differences`` names what two lanes' GPUs do not share (a model or
a clock), so the report can warn that a lane's numbers may come from a faster card.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

from backends.core.errors import UsageError

GIB = 2**30


@dataclass(frozen=True)
class GpuIdentity:
    """One GPU as a lane records it; every field NVML could not read is None (the simulator: all)."""

    index: str
    uuid: str | None = None
    name: str | None = None
    memory_total: int | None = None
    power_limit_w: float | None = None
    max_sm_clock_mhz: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GpuIdentity:
        return cls(str(data.get("index")), data.get("uuid"), data.get("name"), data.get("memory_total"),
                   data.get("power_limit_w"), data.get("max_sm_clock_mhz"))

    def describe(self) -> str:
        return f"GPU {self.index}" + (f" ({self.name})" if self.name else "")


@dataclass(frozen=True)
class Inventory:
    """What NVML says about the box: ``available`` False (with ``reason``) where it cannot be read."""

    available: bool
    reason: str | None
    devices: tuple[GpuIdentity, ...] = ()
    holders: dict[str, tuple[int, ...]] | None = None  # GPU index -> pids holding memory on it
    attributable: bool = True   # False: NVML's pids are another namespace's, holders cannot be told apart


def parse_gpus(text: str, share: bool = False) -> tuple[str, ...]:
    """``"0,1,2,3"`` -> ("0", "1", "2", "3"): non-negative indices, or UsageError naming the fix. Each
    GPU once, unless ``share`` (``--share-gpu``: ``"0,0"`` puts two lanes' servers on GPU 0)."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"--gpus {text!r}: expected GPU indices separated by commas",
                         hint="e.g. --gpus 0,1,2,3 (the indices nvidia-smi shows)")
    for item in items:
        if not (item.isascii() and item.isdigit()) or len(item) > 6:  # "²" is a digit int() cannot read
            raise UsageError(f"--gpus {text!r}: {item!r} is not a GPU index",
                             hint="give the indices nvidia-smi shows, e.g. --gpus 0,1")
    gpus = tuple(str(int(i)) for i in items)
    dupes = sorted({i for i in gpus if gpus.count(i) > 1})
    if dupes and not share:
        raise UsageError(f"--gpus {text!r}: GPU {dupes[0]} is named twice",
                         hint="name each GPU once (--gpus-per-server K gives a server several); to run several "
                              "lanes' servers on one GPU anyway, whose throughput then interferes, add --share-gpu")
    return gpus


def groups(gpus: tuple[str, ...], per_server: int, parallel: int,
           share: bool = False) -> tuple[tuple[str, ...], ...]:
    """Consecutive sets of ``per_server`` GPUs, at most ``parallel`` of them. With ``share`` the sets
    are dealt out in turn until there are ``parallel`` (``--parallel 2 --gpus 0``: two sets on GPU 0)."""
    if per_server < 1:
        raise UsageError(f"--gpus-per-server must be at least 1, got {per_server}", hint="--gpus-per-server 2")
    sets = [gpus[i:i + per_server] for i in range(0, len(gpus) - per_server + 1, per_server)]
    if not sets:
        raise UsageError(f"--gpus-per-server {per_server}: only {len(gpus)} GPU(s) to share "
                         f"({', '.join(gpus) or 'none'})",
                         hint="name more GPUs with --gpus, or give each server fewer")
    twice = next((s for s in sets if len(set(s)) < len(s)), None)
    if twice is not None:
        raise UsageError(f"--gpus-per-server {per_server}: one server's GPU set {','.join(twice)} names a GPU twice",
                         hint="a server's tensor-parallel ranks need GPUs of their own: name distinct GPUs per set")
    if share:
        sets = [sets[i % len(sets)] for i in range(max(parallel, len(sets)))]
    return tuple(sets[:parallel])


def sharing(sets: Collection[tuple[str, ...]]) -> dict[int, tuple[int, ...]]:
    """Per lane (its index in ``sets``), the other lanes whose GPU sets share a GPU with its own."""
    sets = list(sets)
    return {i: tuple(j for j, other in enumerate(sets) if j != i and set(mine) & set(other))
            for i, mine in enumerate(sets)}


def inventory(nvml: ModuleType | None = None) -> Inventory:
    """Read every GPU's identity and which pids hold memory on it; never raises for NVML trouble."""
    from backends.machine.gpu import GpuSampler

    sampler = GpuSampler(nvml=nvml)
    try:
        snap = sampler.sample()
    finally:
        sampler.close()
    if not snap.available:
        return Inventory(False, snap.reason)
    clocks = _max_clocks(nvml if nvml is not None else _pynvml(), len(snap.devices))
    devices = tuple(GpuIdentity(str(d.index), d.uuid, d.name, d.memory_total, d.power_limit_w, clocks.get(d.index))
                    for d in snap.devices)
    holders: dict[str, list[int]] = {str(d.index): [] for d in snap.devices}
    for proc in snap.processes:
        if proc.used_bytes is None or proc.used_bytes > 0:
            holders.setdefault(str(proc.device_index), []).append(proc.pid)
    return Inventory(True, None, devices, {k: tuple(v) for k, v in holders.items()}, not snap.host_pids)


def _pynvml() -> ModuleType | None:
    try:
        import pynvml  # noqa: PLC0415 - lazy, as backends.machine.gpu
    except ImportError:
        return None
    return pynvml


def _max_clocks(nv: Any, count: int) -> dict[int, int]:
    """The top SM clock per GPU (a card capped lower measures slower); {} where NVML cannot say."""
    out: dict[int, int] = {}
    read = getattr(nv, "nvmlDeviceGetMaxClockInfo", None)
    if nv is None or read is None:
        return out
    try:
        nv.nvmlInit()
    except Exception:  # noqa: BLE001 - an identity without clocks is still an identity
        return out
    try:
        for index in range(count):
            try:
                out[index] = int(read(nv.nvmlDeviceGetHandleByIndex(index), nv.NVML_CLOCK_SM))
            except Exception:  # noqa: BLE001
                continue
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out


def choose(requested: tuple[str, ...] | None, inv: Inventory, own_pids: Collection[int] = ()) -> tuple[
        tuple[str, ...], list[str]]:
    """The GPUs to use and notes for the user. ``own_pids``: this state dir's lane servers (ours to
    restart, so the memory they hold does not make a GPU busy)."""
    notes: list[str] = []
    if not inv.available:
        if requested is None:
            raise UsageError(f"--parallel needs --gpus here: NVML cannot list the GPUs ({inv.reason})",
                             hint="name the GPU of each server: --gpus 0,1 (with the simulator any indices "
                                  "do: each server gets its own CUDA_VISIBLE_DEVICES)")
        return requested, notes
    known = [d.index for d in inv.devices]
    holders = inv.holders or {}
    foreign = {i: [p for p in holders.get(i, ()) if not inv.attributable or p not in own_pids] for i in known}
    if requested is not None:
        missing = [g for g in requested if g not in known]
        if missing:
            raise UsageError(f"--gpus: GPU {missing[0]} does not exist here; NVML sees {len(known)} "
                             f"({', '.join(known)})", hint=f"pick from {', '.join(known)}")
        for gpu in dict.fromkeys(requested):
            if foreign[gpu]:
                notes.append(f"GPU {gpu} already holds memory of pids {foreign[gpu]}: its lane may run out of "
                             "memory or measure slower")
        return requested, notes
    free = tuple(i for i in known if not foreign[i])
    busy = [f"GPU {i} (pids {', '.join(map(str, foreign[i]))})" for i in known if foreign[i]]
    if busy:
        notes.append("leaving out GPUs other processes use: " + "; ".join(busy))
    if not free:
        raise UsageError("--parallel: every GPU holds another process's memory: " + "; ".join(busy),
                         hint="stop those processes, or name GPUs with --gpus to use them anyway")
    return free, notes


def differences(devices: Collection[GpuIdentity]) -> list[str]:
    """What the GPUs of a sweep do not share, one sentence each (empty: alike, or nothing known)."""
    out = []
    for label, key, unit in (("model", "name", ""), ("top SM clock", "max_sm_clock_mhz", " MHz"),
                             ("power limit", "power_limit_w", " W"), ("memory", "memory_total", "")):
        values: dict[Any, list[str]] = {}
        for d in devices:
            value = getattr(d, key)
            if value is not None:
                values.setdefault(value, []).append(d.index)
        if len(values) > 1:
            shown = "; ".join(f"GPU {', '.join(idx)}: {_show(v, key)}{unit}" for v, idx in values.items())
            out.append(f"the GPUs differ in {label} ({shown}): runs on different GPUs are not like for like")
    return out


def _show(value: Any, key: str) -> str:
    if key == "memory_total":
        return f"{value / GIB:.0f} GiB"
    if key == "power_limit_w":
        return f"{value:.0f}"
    return str(value)

"""How a sweep begins: its folder and manifest (sweep.json), written one way for every caller.

``ddtune sweep`` and ``ddtune ab`` (on the managed server or in parallel lanes) and the console's sweep
screen all create a sweep here, and a knob search puts the same facts into its search.json
(workloads.search.start). The manifest says where the measurements came from (config file, backend,
model, host) and what the managed server ran before (``server_before``: its knobs, or null when none
ran or when the sweep runs in lanes, whose servers start bare), so that the sweep, and a ``--resume``
of it, returns the server there at the end. A sweep in lanes records its lane settings
(``parallel``) so that ``--resume`` plans the same lanes again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from backends.core import UsageError
from backends.core import shown
from backends.knobs import ServerConfig
from backends.machine import parse_gpus
from backends.server import Lane
from workloads.runs.checks import plausible, read_plan
from workloads.runs.provenance import host_provenance
from workloads.runs.store import new_run_folder
from workloads.sweep.control import ManagedController
from workloads.sweep.lanes import plan_lanes
from workloads.sweep.plan import SweepPlan, SweepStore

UNRECORDED = "unknown"  # server_before in a sweep older than the field: the controller finds out at its first start


@dataclass(frozen=True)
class LaneSettings:
    """Parallel lanes as asked (``--parallel N --gpus LIST --gpus-per-server K [--share-gpu]``), and as a
    sweep's or search's manifest records them (``parallel``), so that ``--resume`` plans the same lanes."""

    parallel: int
    gpus: tuple[str, ...] | None = None  # None: every GPU no other process uses
    gpus_per_server: int = 1
    share_gpu: bool = False  # lanes may share a GPU (their throughput interferes; runs labelled shared-GPU)

    @classmethod
    def resolve(cls, parallel: int | None, gpus: str | None, gpus_per_server: int | None,
                manifest: dict | None = None, share_gpu: bool = False) -> LaneSettings:
        """The options given now (None: not given), each falling back to what the resumed sweep or
        search recorded (``manifest``); ``parallel`` then defaults to as many servers as the GPUs
        named make. A bad ``gpus`` raises UsageError naming --gpus."""
        found = (manifest or {}).get("parallel")
        recorded: dict = found if isinstance(found, dict) else {}
        share_gpu = share_gpu or recorded.get("share_gpu") is True
        chosen = parse_gpus(gpus, share_gpu) if gpus is not None else None
        if chosen is None and recorded.get("gpus") is not None:
            chosen = read_plan("the manifest's parallel.gpus", lambda: _recorded_gpus(recorded["gpus"], share_gpu),
                               "list of GPUs")
        per_server = gpus_per_server or _recorded_count(recorded, "gpus_per_server") or 1
        count = parallel or _recorded_count(recorded, "parallel")
        if count is None:
            count = max(1, len(chosen) // per_server) if chosen else 1
        return cls(count, chosen, per_server, share_gpu)

    def to_json(self) -> dict:
        doc = {"parallel": self.parallel, "gpus": list(self.gpus) if self.gpus is not None else None,
               "gpus_per_server": self.gpus_per_server}
        return {**doc, "share_gpu": True} if self.share_gpu else doc

    async def plan(self, base: ServerConfig,
                   note: Callable[[str], None] | None = None) -> tuple[list[Lane], list[str]]:
        """The lanes (GPU sets, ports) for these settings: workloads.sweep.lanes.plan_lanes."""
        return await plan_lanes(base, self.parallel, self.gpus, self.gpus_per_server, note=note,
                                share=self.share_gpu)


def _recorded_count(recorded: dict, key: str) -> int | None:
    """A lane count a manifest recorded (a resume reads it back): None when absent, else a plausible one."""
    value = recorded.get(key)
    if value is None:
        return None
    return read_plan(f"the manifest's parallel.{key}", lambda: plausible(value, "lanes", key), "lane count")


def _recorded_gpus(value: object, share: bool) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
        raise TypeError(f"expected a list of GPU indices, got {shown(value, 40, True)}")
    try:
        return parse_gpus(",".join(value), share)
    except UsageError as exc:
        raise ValueError(exc.message) from None


def ran_in_lanes(manifest: dict | None) -> bool:
    """Whether the sweep or search this manifest describes ran in parallel lanes."""
    return manifest is not None and isinstance(manifest.get("parallel"), dict)


def origin(config: ServerConfig, before: ServerConfig | None, lanes: LaneSettings | None = None) -> dict:
    """Where a sweep's or search's measurements come from, as its manifest records it."""
    meta = {"config_source": config.source, "backend": config.backend, "model": config.model,
            "host": host_provenance(), "server_before": None if before is None else {"knobs": before.knobs}}
    if lanes is not None:
        meta["parallel"] = lanes.to_json()
    return meta


def check_out_folder(out: str | Path | None) -> None:
    """A new sweep's ``--out DIR``, checked before anything is planned or started (planning lanes may
    stop lane servers): UsageError when DIR already records a sweep or is a file."""
    if out:
        new_run_folder(out, "sweep.json", "sweep")


def start_sweep(plan: SweepPlan, config: ServerConfig, before: ServerConfig | None, *,
                lanes: LaneSettings | None = None, out: str | Path | None = None, kind: str = "sweep") -> SweepStore:
    """Create a sweep's folder (``out``, else runs/<time>-<kind>) and its manifest. ``before``: the config
    the managed server ran when the sweep began (None: none ran, or the sweep runs in ``lanes``)."""
    return SweepStore.create(plan, origin(config, before, lanes), out, kind)


def begin_serial(plan: SweepPlan, controller: ManagedController, *, out: str | Path | None = None,
                 kind: str = "sweep") -> SweepStore:
    """A new sweep on the managed server: what it runs now is where the controller returns it at the
    end, and the manifest records it (reads server.json: call it from a worker or the command)."""
    running = controller.running_config()
    controller.remember_before(running)
    return start_sweep(plan, controller.base, running, out=out, kind=kind)


def resume_serial(controller: ManagedController, out: str | Path | None, kind: str = "sweep") -> SweepStore:
    """An interrupted sweep on the managed server (``out``, else the latest of its kind): the
    controller returns the server to what it ran before the sweep first began."""
    store = SweepStore.open(out, kind)
    before = store.read().get("server_before", UNRECORDED)
    if before != UNRECORDED:
        controller.remember_before(before["knobs"] if isinstance(before, dict) else None)
    return store

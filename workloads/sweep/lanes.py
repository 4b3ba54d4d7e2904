"""Parallel sweeps: up to N servers at once, one per GPU set (a lane), each measured by the engine
of a serial sweep.

Each lane is a ``backends.server.Lane``: its own GPUs (``CUDA_VISIBLE_DEVICES``), its own port (base
+ i, checked free) and its own folder in the state dir holding its server's record. A lane runs its
slots one after another with its own ``SweepEngine`` over a ``ManagedController`` bound to the
lane's config, inside ``lane.scope()``: restart, readiness, verification, bench, eval and the slot
record are the serial sweep's, unchanged. All lanes write to the one sweep folder (slots.jsonl is
appended by this one process), so resume, the report and ``ddtune report`` work as for a serial sweep.

Which lane runs which slot: configuration ``c`` (its index in the plan) in repeat ``r`` prefers
lane ``(c + r - 1) mod N``, so with ``--repeats`` every configuration's runs rotate across the GPUs
and a fast card cannot crown a winner alone. With one repeat a lane that runs dry takes work from the
busiest lane (nothing to rotate then, and no lane idles). Each run's lane, GPUs and their identity
go into its slot record (``server.lane``, ``server.gpus``, ``server.gpu_devices``).

Ctrl-C, SIGTERM or a crash cancels every lane; each stops its own server (unless ``keep_server``)
before the sweep returns. A lane's failed start is its slot's failure, as in a serial sweep, with
one exception: a port taken between planning and the server's bind (someone listens on it, or the
log says "address already in use") moves the lane to the next free port and starts it once more
there (``LaneController``); lane.json, sweep.json and the slot record name the new port.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import replace

from backends.core import Phase
from backends.core import PortTaken, ServerError, UsageError
from backends.knobs import ServerConfig
from backends.server import (
    MOVE_SEARCH, Lane, bind_clash, driver_flags, ephemeral_note, ephemeral_range, lane_servers, live_lane_pids,
    next_free_port, port_owner_pid, record_move, save_lane, stop_lane_servers,
)
from workloads.runs.store import mark_interrupted_runs
from workloads.runs.attempts import begin_attempt
from workloads.sweep.control import ManagedController
from workloads.sweep.engine import SweepEngine, recording_outcome
from workloads.sweep.events import (
    Applied, LaneClosed, LaneEvent, LaneMoved, LanesStarted, Progress, SlotFinished, SweepEvent, SweepStarted,
)
from workloads.sweep.plan import Slot, SlotRecord, SweepConfig, SweepPlan, SweepStore


def gpu_users(lanes: Collection[Lane]) -> dict[str, list[int]]:
    """Each GPU the lanes run on and the lanes (their indexes, in order) that run on it."""
    users: dict[str, list[int]] = {}
    for lane in lanes:
        for gpu in dict.fromkeys(lane.gpus):
            users.setdefault(gpu, []).append(lane.index)
    return users


class StartGate:
    """One lock per GPU that several lanes share (``--share-gpu``): a lane that (re)starts its server
    holds the locks of its GPUs until that start is over, so the servers of one GPU start one after
    another. SGLang sizes its KV cache from the memory free when it starts (--mem-fraction-static):
    two starting at once on one GPU can each count the other's memory as free."""

    def __init__(self, lanes: Collection[Lane]) -> None:
        self.locks = {gpu: asyncio.Lock() for gpu, users in gpu_users(lanes).items() if len(users) > 1}

    @contextlib.asynccontextmanager
    async def hold(self, gpus: Collection[str], progress: Progress) -> AsyncIterator[None]:
        mine = sorted(set(gpus) & self.locks.keys(), key=int)  # one order for every lane: no deadlock
        busy = [gpu for gpu in mine if self.locks[gpu].locked()]
        if busy:
            progress("note", f"waiting for another lane's server to finish starting on GPU {', '.join(busy)} "
                             "(a shared GPU: its servers start one at a time)")
        async with contextlib.AsyncExitStack() as stack:
            for gpu in mine:
                await stack.enter_async_context(self.locks[gpu])
            yield


class LaneController(ManagedController):
    """The serial sweep's controller on one lane's port and GPUs; every Applied names the lane.

    A start that fails because the lane's port was taken since planning (someone else listens on
    it, or the server's log says "address already in use" for it) moves the lane to the next free
    port no other lane uses and is tried once more there; ``on_moved(lane, old_port, why)`` records
    the move. Any other failure is the slot's, as in a serial sweep. A lane that shares a GPU starts
    its server through ``gate`` (one start at a time per GPU)."""

    def __init__(self, lane: Lane, base: ServerConfig, *, others: Callable[[], Collection[int]] = frozenset,
                 on_moved: Callable[[Lane, int, str], None] | None = None,
                 move_lock: asyncio.Lock | None = None, gate: StartGate | None = None) -> None:
        super().__init__(lane.config(base))
        self.lane = lane
        self.server_base = base
        self.others = others          # the ports the other lanes use now
        self.on_moved = on_moved or (lambda lane, old, why: None)
        # one lane moves at a time: two lanes moving at once must not pick the same port
        self.move_lock = move_lock or asyncio.Lock()
        self.gate = gate or StartGate([lane])
        self.remember_before(None)  # the sweep started this server: it stops it at the end

    async def apply(self, config: SweepConfig, progress: Progress) -> Applied:
        if self.lane.shares_with and self.restart_needed(config):
            async with self.gate.hold(self.lane.gpus, progress):
                return await self._apply(config, progress)
        return await self._apply(config, progress)

    async def _apply(self, config: SweepConfig, progress: Progress) -> Applied:
        why: str | None
        try:
            applied = await super().apply(config, progress)
        except PortTaken as exc:
            if exc.port != self.lane.port:
                raise
            why = exc.message.removeprefix("refusing to start: ")
        else:
            why = self._bind_clash(applied)
            if why is None:
                return self._tagged(applied)
        moved = await self._move(why)
        return self._tagged(await super().apply(config, progress), moved)

    def _bind_clash(self, applied: Applied) -> str | None:
        """The log line of a start that failed binding the lane's port, if that is how it failed."""
        session = self.session
        state = session.state if session is not None else None
        if applied.ok or session is None or state is None or state.phase != Phase.FAILED:
            return None
        return bind_clash(session.fatals_of(state), self.lane.port)

    async def _move(self, why: str) -> dict:
        old = self.lane.port
        async with self.move_lock:
            port = await asyncio.to_thread(next_free_port, old, set(self.others()), port_owner_pid)
            if port is None:
                raise ServerError(f"{self.lane.label}: port {old} was taken ({why}) and none of the next "
                                  f"{MOVE_SEARCH} ports is free",
                                  hint="set [server] port to a base with free ports after it")
            self.lane = replace(self.lane, port=port)
            self.base = self.lane.config(self.server_base)
            self.on_moved(self.lane, old, why)
        return {"from": old, "to": port, "why": why}

    def _tagged(self, applied: Applied, moved: dict | None = None) -> Applied:
        shared = {"shared_gpu": True, "gpu_shared_with": list(self.lane.shares_with)} if self.lane.shares_with else {}
        info = {**applied.info, "lane": self.lane.index, "gpus": list(self.lane.gpus), "port": self.lane.port,
                "gpu_devices": [d.to_json() for d in self.lane.devices], **shared,
                **({"port_moved": moved} if moved else {})}
        return replace(applied, info=info)

    async def shutdown(self) -> str | None:
        """Stop the lane's server (proved ours first, as ``down`` does); what was done, for the user."""
        from backends.server import ServerSession

        if not self._started:
            return None
        session = self.session or ServerSession(self.base, stream_log=False)
        stopped = await session.stop()
        return stopped.reason if stopped is not None and stopped.reason else "its server had already gone"


def assign(pending: list[Slot], plan: SweepPlan, lanes: int) -> list[list[Slot]]:
    """Each lane's queue, in schedule order: configuration c's repeat r goes to lane (c + r - 1) mod N."""
    names = [c.name for c in plan.configs]
    queues: list[list[Slot]] = [[] for _ in range(lanes)]
    for slot in pending:
        queues[(names.index(slot.config) + slot.repeat - 1) % lanes].append(slot)
    return queues


def _flag_value(args: tuple[str, ...], *flags: str) -> str | None:
    """The value given to one of ``flags`` in a server's extra_args (``--flag V`` or ``--flag=V``)."""
    for i, arg in enumerate(args):
        for flag in flags:
            if arg == flag and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return None


def _tp_size(args: tuple[str, ...]) -> int | None:
    value = _flag_value(args, "--tp-size", "--tp", "--tensor-parallel-size")
    return int(value) if value is not None and value.isdigit() else None


def shared_notes(lanes: list[Lane], base: ServerConfig) -> list[str]:
    """What the user must know of lanes that share GPUs (``--share-gpu``): none when no GPU is shared."""
    notes = [f"GPU {gpu} is shared by lanes {', '.join(map(str, idx))} (--share-gpu): their throughput interferes "
             "(one GPU, time-sliced), so their runs are labelled shared-GPU and compare lane management, not speed; "
             "their servers start one at a time" for gpu, idx in gpu_users(lanes).items() if len(idx) > 1]
    if notes and _flag_value(base.extra_args, "--mem-fraction-static") is None:
        notes.append("each SGLang server takes --mem-fraction-static of the GPU memory free when it starts (by "
                     "default most of it): set it in [server] extra_args so every server of a shared GPU fits, "
                     "e.g. --mem-fraction-static 0.4 for two")
    return notes


async def plan_lanes(base: ServerConfig, parallel: int, gpus: tuple[str, ...] | None, per_server: int = 1, *,
                     nvml=None, note: Callable[[str], None] | None = None,
                     share: bool = False) -> tuple[list[Lane], list[str]]:
    """The lanes to run: GPU sets (``--gpus`` or every GPU no foreign process uses), one port each;
    with ``share`` (``--share-gpu``) several lanes may run on one GPU. Stops this state dir's lane
    servers beyond the new lane count (ours, left by an earlier sweep). Call it outside any lane
    scope. Returns (lanes, notes for the user)."""
    from backends.machine import differences, groups, inventory, sharing
    from backends.machine import choose as choose_gpus
    from backends.machine import server_tree_pids
    from backends.server import assign_ports, is_alive, recorded_server

    if not driver_flags(base.backend).spawns:
        raise UsageError(f"--parallel starts one server per GPU set, and backend {base.backend!r} is not one "
                         "ddtune starts", hint="use backend = \"sglang\" (or \"sim\") in [server]; sweep an "
                                               "endpoint or a systemd unit serially")
    if parallel < 1:
        raise UsageError(f"--parallel must be at least 1, got {parallel}", hint="--parallel 2")
    tp = _tp_size(base.extra_args)
    if tp is not None and tp != per_server:
        raise UsageError(f"--gpus-per-server {per_server} but [server] extra_args run --tp-size {tp}",
                         hint=f"give each server as many GPUs as its tensor-parallel size: --gpus-per-server {tp}")
    nccl = _flag_value(base.extra_args, "--nccl-port")
    if nccl is not None and parallel > 1:
        raise UsageError(f"--parallel {parallel}: [server] extra_args pin --nccl-port {nccl}, which every lane's "
                         "server would bind", hint="drop --nccl-port from extra_args: SGLang picks a free one for "
                                                   "each server")
    inv = await asyncio.to_thread(inventory, nvml)
    own = await asyncio.to_thread(live_lane_pids)
    chosen, notes = choose_gpus(gpus, inv, own)
    sets = groups(chosen, per_server, parallel, share)
    if len(sets) < parallel:
        notes.append(f"{len(sets)} lane(s), not {parallel}: GPUs {', '.join(chosen)} make {len(sets)} set(s) "
                     f"of {per_server}")
    recorded = await asyncio.to_thread(lane_servers, note)
    extra = [s.index for s in recorded if s.index >= len(sets)]
    if extra:
        notes += [line for _, line in await stop_lane_servers(base, extra, note=note)]
    by_lane = {s.index: server_tree_pids(s.state.pid, s.state.pgid)
               for s in recorded if s.alive and s.state.pid and s.index < len(sets)}
    ports = await asyncio.to_thread(assign_ports, base.port, len(sets), by_lane, port_owner_pid)
    ephemeral = ephemeral_note(ports, ephemeral_range())
    if ephemeral:
        notes.append(ephemeral)
    main = recorded_server(note)
    if main is not None and is_alive(main):
        notes.append(f"the managed server pid {main.pid} keeps running on port {main.port}; the lanes use "
                     f"ports {', '.join(map(str, ports))}")
    known = {d.index: d for d in inv.devices}
    from backends.machine import GpuIdentity

    shared = sharing(sets)
    lanes = [Lane(i, g, ports[i], tuple(known.get(x, GpuIdentity(x)) for x in g), shared[i])
             for i, g in enumerate(sets)]
    notes += shared_notes(lanes, base)
    notes += differences(list({d.index: d for lane in lanes for d in lane.devices}.values()))
    return lanes, notes


class LanePool:
    """Each lane's server controller, kept for as long as the pool lives: one sweep, or every round
    of a search (a lane keeps the configuration it last ran, so a later round measures it there
    without a restart). ``close`` stops every lane's server unless ``keep_server``."""

    def __init__(self, lanes: list[Lane], base: ServerConfig, *, keep_server: bool = False) -> None:
        if not lanes:
            raise UsageError("a parallel sweep needs at least one lane", hint="--parallel 2 --gpus 0,1")
        self.lanes = lanes
        self.keep_server = keep_server
        # told of each lane that moved port (set by the LaneSweep running the pool now)
        self.on_move: Callable[[Lane, int, str], None] = lambda lane, old, why: None
        moving = asyncio.Lock()
        gate = StartGate(lanes)
        self.controllers = {lane.index: LaneController(lane, base, on_moved=self._moved, move_lock=moving,
                                                       others=self._ports_but(lane.index), gate=gate)
                            for lane in lanes}

    def _ports_but(self, index: int) -> Callable[[], set[int]]:
        """The ports the lanes other than ``index`` use now."""
        return lambda: {lane.port for lane in self.lanes if lane.index != index}

    def _moved(self, lane: Lane, old_port: int, why: str) -> None:
        """A lane now runs on another port: the pool's lanes and its lane.json say so."""
        self.lanes[:] = [lane if other.index == lane.index else other for other in self.lanes]
        record_move(lane, old_port, why)
        self.on_move(lane, old_port, why)

    def runs(self, lane: Lane, config: SweepConfig) -> bool:
        """The lane's server runs ``config`` now (measuring it there needs no restart)."""
        with lane.scope():
            return not self.controllers[lane.index].restart_needed(config)

    async def close_lane(self, lane: Lane) -> str:
        """Stop the lane's server (unless --keep-server); what was done, for the user."""
        if self.keep_server:
            return "server kept running (--keep-server)"
        with lane.scope():
            what = await asyncio.shield(self.controllers[lane.index].shutdown())
        return what or "no server was started"

    async def close(self, emit: Callable[[LaneClosed], None] | None = None) -> None:
        """Close every lane at once; survives a second Ctrl-C (the stops go on, shielded)."""
        async def one(lane: Lane) -> None:
            what = await self.close_lane(lane)
            (emit or (lambda e: None))(LaneClosed(lane.index, what))

        await asyncio.shield(asyncio.gather(*(one(lane) for lane in self.lanes)))


Placement = Callable[[list[Slot]], list[list[Slot]]]


class LaneSweep:
    """Run a SweepPlan over several lanes at once into one SweepStore.

    By default the sweep owns its lanes (a LanePool it closes at the end) and places slots by
    ``assign``. A search passes its own ``pool`` (kept across rounds, closed by the search),
    ``placement`` (each lane's queue for the pending slots) and ``steal`` (may a lane that runs dry
    take another's work)."""

    def __init__(self, plan: SweepPlan, store: SweepStore, lanes: list[Lane], base: ServerConfig, *,
                 api_key: str | None = None, on_event: Callable[[SweepEvent], None] | None = None,
                 keep_server: bool = False, notes: tuple[str, ...] = (), pool: LanePool | None = None,
                 placement: Placement | None = None, steal: bool | None = None) -> None:
        self.pool = pool or LanePool(lanes, base, keep_server=keep_server)
        self.owns_pool = pool is None
        self.plan = plan
        self.store = store
        self.lanes = self.pool.lanes
        self.api_key = api_key
        self.emit = on_event or (lambda e: None)
        self.notes = notes
        self.placement = placement or (lambda pending: assign(pending, plan, len(self.lanes)))
        # rotation across GPUs is the point of a repeated sweep's order: no lane takes another's runs
        self.steal = plan.repeats == 1 if steal is None else steal
        self.queues: list[list[Slot]] = []

    def _next(self, index: int) -> Slot | None:
        own = self.queues[index]
        if own:
            return own.pop(0)
        if not self.steal:
            return None
        donor = max(self.queues, key=len)
        return donor.pop() if donor else None

    async def run(self) -> list[SlotRecord]:
        finished = {r.slot.index: r for r in self.store.records()}
        slots = self.plan.schedule()
        pending = [s for s in slots if s.index not in finished]
        mark_interrupted_runs(self.store.path.parent)
        manifest = self.store.read()
        begin_attempt(manifest)
        manifest["resumed_at"] = manifest.get("resumed_at", []) + ([time.time()] if finished else [])
        manifest["lanes"] = [lane.to_json() for lane in self.lanes]
        self.store.write(manifest)
        self.queues = self.placement(pending)
        self.pool.on_move = self._moved
        self.emit(SweepStarted(str(self.store.path), tuple(slots), tuple(sorted(finished)), None))
        self.emit(LanesStarted(tuple(self.lanes), self.notes))
        with recording_outcome(self.store, self.emit, finished):
            async with asyncio.TaskGroup() as group:
                for lane in self.lanes:
                    group.create_task(self._lane(lane, finished))
        return [finished[i] for i in sorted(finished)]

    def _moved(self, lane: Lane, old_port: int, why: str) -> None:
        self.store.update(lanes=[other.to_json() for other in self.lanes])
        self.emit(LaneMoved(lane.index, old_port, lane.port, why))

    async def _lane(self, lane: Lane, finished: dict[int, SlotRecord]) -> None:
        with lane.scope():
            save_lane(lane, str(self.store.path))
            controller = self.pool.controllers[lane.index]
            engine = SweepEngine(self.plan, self.store, controller, api_key=self.api_key,
                                 on_event=lambda e: self.emit(LaneEvent(lane.index, e)),
                                 expected_restart_s=controller.expected_restart_s())
            try:
                while (slot := self._next(lane.index)) is not None:
                    record = await engine.run_slot(slot, self.queues[lane.index])  # ETA: its own queue
                    self.store.append(record)
                    finished[slot.index] = record
                    self.emit(LaneEvent(lane.index, SlotFinished(record, engine.eta())))
            finally:
                if self.owns_pool:
                    self.emit(LaneClosed(lane.index, await self.pool.close_lane(lane)))

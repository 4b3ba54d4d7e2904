"""The sweep engine: for each slot, bring the server to the slot's configuration, then measure.

Per slot: ``controller.apply(config)`` (restarts only when the knobs differ from what runs, waits for
readiness, verifies the knobs took effect) -> the lossless check when the plan has a baseline
(workloads.sweep.lossless) -> a few warm-up requests -> the bench matrix (durable
cells) -> the coding eval -> one line in slots.jsonl. A slot whose server fails to start or verify,
or dies mid-run, is recorded ``failed`` with its reason and the sweep goes on. A slot already in
slots.jsonl is never run again, so an interrupted sweep resumes where it stopped (a slot cut short
mid-bench keeps its finished cells and runs only the missing ones).

The engine prints nothing: it publishes frozen event objects to ``on_event`` so the CLI prints
lines and the console fills a screen from the same stream. The server controller is injected
(``ServerController``): the CLI passes a ``ManagedController`` over a backends.server ServerSession, tests may
pass their own.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from backends.core import DdtuneError
from backends.core import make_folder
from workloads.bench.matrix import BenchRunner
from workloads.bench.session import load_sets, run_recorded
from workloads.client.stream import StreamingClient
from workloads.grading.eval_runner import run_eval
from workloads.runs.provenance import host_provenance, server_provenance
from workloads.runs.store import RunStore, mark_interrupted_runs
from workloads.runs.attempts import begin_attempt, recording_end
from workloads.sweep.events import (
    CellFinished, EvalFinished, LosslessChecked, ServerApplied, ServerController, ServerPhaseChanged,
    SlotFinished, SlotStarted, SweepEvent, SweepFinished, SweepStarted,
)
from workloads.sweep.lossless import check_slot
from workloads.sweep.plan import Slot, SlotRecord, SweepConfig, SweepPlan, SweepStore

WARMUP_PROMPT = "Write one sentence about the sea."


class EtaModel:
    """Remaining time from what this sweep measured so far: restarts, cells and evals."""

    def __init__(self, expected_restart_s: float | None = None) -> None:
        self.restart_s: list[float] = []
        self.cell_s: list[float] = []
        self.eval_s: list[float] = []
        self.expected_restart_s = expected_restart_s

    def eta(self, restarts: int, cells: int, evals: int) -> float | None:
        restart = statistics.median(self.restart_s) if self.restart_s else self.expected_restart_s
        if (restarts and restart is None) or (cells and not self.cell_s) or (evals and not self.eval_s):
            return None
        total = restarts * (restart or 0.0) + cells * (statistics.mean(self.cell_s) if self.cell_s else 0.0)
        return total + evals * (statistics.mean(self.eval_s) if self.eval_s else 0.0)


class _ObservedStore(RunStore):
    """A RunStore that tells the engine when a cell lands on disk."""

    def __init__(self, path: Path, on_cell: Callable[[dict], None]) -> None:
        super().__init__(path)
        self._on_cell = on_cell

    def append_cell(self, cell: dict) -> None:
        super().append_cell(cell)
        self._on_cell(cell)


def recording_outcome(store: SweepStore, emit: Callable[[SweepEvent], None],
                      finished: dict[int, SlotRecord]) -> AbstractContextManager[None]:
    """Around a sweep's run (serial or in lanes): however it ends, sweep.json says how, with the counts
    of what finished, and SweepFinished goes out."""
    def end(status: str) -> None:
        records = [finished[i] for i in sorted(finished)]
        failed = sum(1 for r in records if r.status != "done")
        store.update(status=status, finished_at=time.time(), slots_done=len(records) - failed, slots_failed=failed)
        emit(SweepFinished(str(store.path), status, len(records) - failed, failed))

    return recording_end(end)


class SweepEngine:
    def __init__(self, plan: SweepPlan, store: SweepStore, controller: ServerController, *,
                 api_key: str | None = None, on_event: Callable[[SweepEvent], None] | None = None,
                 expected_restart_s: float | None = None) -> None:
        self.plan = plan
        self.store = store
        self.controller = controller
        self.api_key = api_key
        self.emit = on_event or (lambda e: None)
        self.eta_model = EtaModel(expected_restart_s)
        self._pending: list[Slot] = []
        self._sets: tuple | None = None  # the bench's prompt sets and problems, read once (load_sets)

    # --- ETA -----------------------------------------------------------------------------------
    def _eta(self, cells_left_in_slot: int = 0, restart_pending: bool = False) -> float | None:
        restarts = int(restart_pending)
        prev = None
        for slot in self._pending:
            if prev is not None and slot.config != prev:
                restarts += 1
            prev = slot.config
        cells = cells_left_in_slot + len(self._pending) * len(self.plan.bench.cells())
        evals = len(self._pending) if self.plan.eval else 0
        return self.eta_model.eta(restarts, cells, evals)

    # --- run -----------------------------------------------------------------------------------
    async def run(self) -> list[SlotRecord]:
        finished = {r.slot.index: r for r in self.store.records()}
        slots = self.plan.schedule()
        self._pending = [s for s in slots if s.index not in finished]
        mark_interrupted_runs(self.store.path.parent)
        manifest = self.store.read()
        begin_attempt(manifest)  # who writes the sweep, so a killed sweep reads interrupted later
        manifest["resumed_at"] = manifest.get("resumed_at", []) + ([time.time()] if finished else [])
        self.store.write(manifest)
        self.emit(SweepStarted(str(self.store.path), tuple(slots), tuple(sorted(finished)), self._eta()))
        with recording_outcome(self.store, self.emit, finished):
            while self._pending:
                slot = self._pending.pop(0)
                record = await self._run_slot(slot)
                self.store.append(record)
                finished[slot.index] = record
                self.emit(SlotFinished(record, self._eta()))
        return [finished[i] for i in sorted(finished)]

    async def run_slot(self, slot: Slot, pending: list[Slot] | None = None) -> SlotRecord:
        """Run one slot (apply its configuration, measure) and return its record, unwritten: the
        entry point of a runner that schedules slots itself (workloads/sweep/lanes.py). ``pending``:
        the slots this engine still has to run after it, for its ETA."""
        if pending is not None:
            self._pending = list(pending)
        return await self._run_slot(slot)

    def eta(self) -> float | None:
        """Seconds left for the pending slots, from what this engine measured so far."""
        return self._eta()

    async def _run_slot(self, slot: Slot) -> SlotRecord:
        config = self.plan.config(slot.config)
        restart = self.controller.restart_needed(config)
        self.emit(SlotStarted(slot, restart, self._eta(len(self.plan.bench.cells()), restart)))
        started = time.time()

        check: dict | None = None

        def fail(reason: str, server: dict | None = None, bench_dir: str | None = None) -> SlotRecord:
            return SlotRecord(slot, "failed", reason, bench_dir, None, server or {}, started, time.time(), check)

        try:
            applied = await self.controller.apply(config, lambda phase, detail: self.emit(
                ServerPhaseChanged(slot, phase, detail)))
        except DdtuneError as exc:
            return fail(exc.message + (f" ({exc.hint})" if exc.hint else ""))
        server = {"restarted": applied.restarted, "restart_s": applied.restart_s, "phases": dict(applied.phases),
                  **applied.info}
        if applied.restarted and applied.restart_s is not None:
            self.eta_model.restart_s.append(applied.restart_s)
        self.emit(ServerApplied(slot, applied))
        url = applied.url
        if not applied.ok or not url:
            return fail(applied.reason or "the server did not become ready", server)
        if any(c.baseline for c in self.plan.configs):
            check = await check_slot(self.store.path, config, url, self.api_key or applied.api_key)
            self.emit(LosslessChecked(slot, check))
        slot_dir = self.store.slot_dir(slot)
        bench_dir = slot_dir / "bench"
        try:
            await self._bench(slot, config, url, applied.api_key, bench_dir, server)
        except DdtuneError as exc:
            return fail(exc.message, server, str(bench_dir))
        eval_dir = None
        if self.plan.eval is not None:
            t0 = time.monotonic()
            try:
                result = await run_eval(url, api_key=self.api_key or applied.api_key,
                                        problem_ids=list(self.plan.eval.problems or []) or None,
                                        max_tokens=self.plan.eval.max_tokens, concurrency=self.plan.eval.concurrency,
                                        root=slot_dir)
            except DdtuneError as exc:
                return fail(f"coding eval: {exc.message}", server, str(bench_dir))
            self.eta_model.eval_s.append(time.monotonic() - t0)
            eval_dir = result["run_dir"]
            self.emit(EvalFinished(slot, result["summary"]))
        return SlotRecord(slot, "done", None, str(bench_dir), eval_dir, server, started, time.time(), check)

    async def _bench(self, slot: Slot, config: SweepConfig, url: str, api_key: str | None, path: Path,
                     server: dict) -> None:
        plan = self.plan.bench
        total = len(plan.cells())
        last = [time.monotonic()]

        def on_cell(cell: dict) -> None:
            now = time.monotonic()
            self.eta_model.cell_s.append(now - last[0])
            last[0] = now
            done = len(store.cells())
            self.emit(CellFinished(slot, cell, done, total, self._eta(total - done)))

        store = _ObservedStore(path, on_cell)
        key = self.api_key or api_key
        async with StreamingClient(url, api_key=key, concurrency=max(plan.concurrencies)) as client:
            for _ in range(self.plan.warmup_requests):
                await client.chat([{"role": "user", "content": WARMUP_PROMPT}], max_tokens=16)
            provenance = await server_provenance(client)
            meta = {"sweep": {"path": str(self.store.path), "slot": slot.key, "config": config.to_json(),
                              "repeat": slot.repeat, "controller": server}}
            if not store.run_file.is_file():
                make_folder(path)
                if self._sets is None:
                    self._sets = load_sets(plan)
                store.start("bench", {"plan": plan.to_json(),
                                      "prompt_sets": [s.describe() for s in self._sets[0].values()],
                                      "server": provenance, "host": host_provenance(),
                                      "started_at": time.time(), "finished_at": None, **meta})
            else:
                store.resume(server_on_resume=provenance, **meta)
            if self._sets is None:
                self._sets = load_sets(plan)
            last[0] = time.monotonic()
            await run_recorded(BenchRunner(client, plan, store, *self._sets), store)

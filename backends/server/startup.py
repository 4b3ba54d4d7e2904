"""Where a server start stands: a pure state machine over log events, plus the history of past
starts (``startups.jsonl`` in the state dir) that gives an ETA.

Phases, in order: idle -> stopping-old -> waiting-for-port-and-gpu -> starting-process ->
loading-weights -> capturing-graphs -> warmup -> ready | failed. The lifecycle code calls
``begin_stop``, ``begin_wait`` and ``begin_start`` (the new process exists); log events move the
rest through ``feed``. ``starting-process`` is the new interpreter importing SGLang: on a real
0.5.17 server the ``server_args=`` dump comes ~25 s before ``Load weight begin``, and those seconds
are imports, never weight loading; loading begins at the first weight, memory or draft-runner line.
Time is always passed in (``now``, seconds on any monotonic clock), so the tracker itself never
reads a clock.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from backends.core.datafile import Note, read_jsonl
from backends.core.fields import shown
from backends.core.phase import Phase
from backends.core.statefs import StateWriteError, append_line, open_state_for_reading
from backends.logs.events import (AppStartupComplete, DraftRunner, Fatal, GraphCaptureBegin, GraphCaptureEnd,
    GraphCaptureProgress, GraphCaptureSizes, KvCache, LogEvent, MaxTotalTokens, MemoryPoolEnd, ServerArgs,
    ServerReady, ServerStarted, ShardProgress, StartupTimings, UvicornRunning, WeightLoadBegin, WeightLoadEnd)
from backends.logs.llama_events import (LlamaDraftBlock, LlamaDraftClamp, LlamaDraftParams, LlamaListening,
    LlamaModelLoaded, LlamaModelLoading, LlamaSlots, LlamaSpecImpl)

PHASES = (Phase.IDLE, Phase.STOPPING, Phase.WAITING, Phase.STARTING_PROCESS, Phase.LOADING, Phase.CAPTURING,
          Phase.WARMUP, Phase.READY, Phase.FAILED)  # a start's, in order
WORK_PHASES = PHASES[1:7]  # the ones that take time: stopping-old .. warmup
MAX_PHASE_S = 7 * 24 * 3600.0  # no phase of a start lasts a week: a longer "duration" is not one
_ORDER = {p: i for i, p in enumerate(PHASES)}

_LOADING_EVENTS = (WeightLoadBegin, ShardProgress, WeightLoadEnd, DraftRunner, KvCache, MemoryPoolEnd,
                   LlamaModelLoading, LlamaModelLoaded, LlamaSlots, LlamaSpecImpl, LlamaDraftParams, LlamaDraftBlock,
                   LlamaDraftClamp)
_CAPTURE_EVENTS = (GraphCaptureBegin, GraphCaptureSizes, GraphCaptureProgress, GraphCaptureEnd,
                   MaxTotalTokens, StartupTimings)
_WARMUP_EVENTS = (ServerStarted, AppStartupComplete, UvicornRunning, LlamaListening)


@dataclass(frozen=True)
class PhaseChange:
    phase: Phase
    detail: str
    at: float


@dataclass(frozen=True)
class Progress:
    """One report for the user: the startup phase, its detail, times, and the pid it concerns."""

    phase: Phase
    detail: str
    elapsed_s: float
    phase_elapsed_s: float
    eta_s: float | None
    pid: int | None = None


class StartupTracker:
    """Feed it events; read ``phase``, ``detail``, ``durations(now)`` and ``eta_s(now)``.

    ``expected`` maps phase -> typical seconds (``StartupHistory.medians(model)``)."""

    def __init__(self, expected: dict[str, float] | None = None) -> None:
        self.expected = dict(expected or {})
        self._reset()

    def _reset(self) -> None:
        self.phase: Phase = Phase.IDLE
        self.detail = ""
        self.error: str | None = None
        self.started_at: float | None = None
        self.changes: list[PhaseChange] = []
        self._entered_at: float | None = None
        self._done: dict[str, float] = {}
        self._weights_done = 0

    # --- notices from the lifecycle code ----------------------------------------------------
    def begin_stop(self, now: float) -> None:
        """A new start begins by stopping the old server: earlier progress is forgotten."""
        self._reset()
        self._enter(Phase.STOPPING, "", now)

    def begin_wait(self, now: float, detail: str = "") -> None:
        self._enter(Phase.WAITING, detail, now)

    def begin_start(self, now: float, detail: str = "") -> None:
        """The new server process exists; until its first weight line it is importing."""
        self._advance(Phase.STARTING_PROCESS, detail or "importing", now)

    def fail(self, reason: str, now: float) -> None:
        if self.phase in (Phase.READY, Phase.FAILED):
            return
        self.error = reason
        self._enter(Phase.FAILED, reason, now)

    # --- log events -------------------------------------------------------------------------
    def feed(self, event: LogEvent, now: float) -> bool:
        """Apply one event; True when phase or detail changed. Backward moves are ignored."""
        before = (self.phase, self.detail)
        if self.phase in (Phase.READY, Phase.FAILED):
            return False  # a crash after ready is the lifecycle's business (status), not startup's
        if isinstance(event, Fatal):
            if not event.generic:
                self.fail(f"{event.kind}: {event.message}", now)
        elif isinstance(event, ServerArgs):
            self._advance(Phase.STARTING_PROCESS, "importing (server args read)", now)
        elif isinstance(event, _LOADING_EVENTS):
            self._loading(event, now)
        elif isinstance(event, _CAPTURE_EVENTS):
            self._capturing(event, now)
        elif isinstance(event, _WARMUP_EVENTS):
            self._advance(Phase.WARMUP, "http server up, warming up", now)
        elif isinstance(event, ServerReady):
            self._advance(Phase.READY, "", now)
        return (self.phase, self.detail) != before

    def _loading(self, e: LogEvent, now: float) -> None:
        which = "target" if self._weights_done == 0 else "draft"
        if not e.is_lead:
            self._advance(Phase.LOADING, self.detail or f"{which} weights", now)
            return
        if isinstance(e, ShardProgress):
            detail = f"shard {e.done}/{e.total} {which}"
        elif isinstance(e, WeightLoadEnd):
            self._weights_done += 1
            detail = f"{which} weights loaded"
        elif isinstance(e, (KvCache, MemoryPoolEnd)):
            detail = "allocating KV cache"
        elif isinstance(e, DraftRunner):
            detail = "draft runner ready"
        elif isinstance(e, LlamaModelLoading):
            detail = f"{'draft' if e.draft else 'target'} model"
        elif isinstance(e, LlamaModelLoaded):
            detail = "models loaded"
        elif isinstance(e, LlamaSlots):
            detail = f"{e.n_slots} slot(s) of {e.n_ctx_slot} tokens"
        elif isinstance(e, (LlamaSpecImpl, LlamaDraftParams, LlamaDraftBlock, LlamaDraftClamp)):
            detail = "DFlash draft set up"
        else:
            detail = f"{which} weights"
        self._advance(Phase.LOADING, detail, now)

    def _capturing(self, e: LogEvent, now: float) -> None:
        detail = self.detail if self.phase == Phase.CAPTURING else ""
        if isinstance(e, GraphCaptureBegin):
            detail = e.name if e.name != "default" else "cuda graph"
        elif isinstance(e, GraphCaptureProgress):
            base = detail.split(" bs=")[0].split(" (")[0] or "cuda graph"
            detail = f"{base} bs={e.bs} ({e.done}/{e.total})" if e.bs is not None else f"{base} ({e.done}/{e.total})"
        elif isinstance(e, GraphCaptureEnd):
            detail = f"{e.name} done"
        self._advance(Phase.CAPTURING, detail, now)

    def _advance(self, phase: Phase, detail: str, now: float) -> None:
        if _ORDER[phase] < _ORDER[self.phase]:
            return
        if phase == self.phase:
            self.detail = detail
            return
        self._enter(phase, detail, now)

    def _enter(self, phase: Phase, detail: str, now: float) -> None:
        if self.started_at is None:
            self.started_at = now
        if self._entered_at is not None and self.phase in WORK_PHASES:
            self._done[self.phase] = self._done.get(self.phase, 0.0) + max(0.0, now - self._entered_at)
        self.phase, self.detail, self._entered_at = phase, detail, now
        self.changes.append(PhaseChange(phase, detail, now))

    # --- readings ---------------------------------------------------------------------------
    def phase_elapsed(self, now: float) -> float:
        return 0.0 if self._entered_at is None else max(0.0, now - self._entered_at)

    def durations(self, now: float | None = None) -> dict[str, float]:
        """Seconds spent per work phase so far (the current one up to ``now`` when given)."""
        out = dict(self._done)
        if now is not None and self.phase in WORK_PHASES and self._entered_at is not None:
            out[self.phase] = out.get(self.phase, 0.0) + self.phase_elapsed(now)
        return {p: round(out[p], 3) for p in WORK_PHASES if p in out}

    def elapsed(self, now: float) -> float:
        return 0.0 if self.started_at is None else max(0.0, now - self.started_at)

    def eta_s(self, now: float) -> float | None:
        """Seconds left until ready, from the typical phase times; None without history."""
        if not self.expected or self.phase == Phase.FAILED:
            return None  # no history of this server: no guess, not even "0 s" once the log says ready
        if self.phase == Phase.READY:
            return 0.0
        if self.phase == Phase.IDLE:
            return round(sum(self.expected.get(p, 0.0) for p in WORK_PHASES[2:]), 3)
        left = max(0.0, self.expected.get(self.phase, 0.0) - self.phase_elapsed(now))
        later = WORK_PHASES[WORK_PHASES.index(self.phase) + 1:]
        return round(left + sum(self.expected.get(p, 0.0) for p in later), 3)


class StartupHistory:
    """Per-phase durations of past starts, one JSON object a line, keyed by server
    (``ServerConfig.startup_key()``: backend, model and launch flags, not the knobs). A start
    written before that key existed (model only) is not this server's and gives no ETA."""

    FILENAME = "startups.jsonl"
    KEEP = 20  # medians over the last KEEP successful starts of a model
    MAX_READ = 1024**2   # its last MiB: ~4000 starts (a line is ~250 bytes)
    MAX_LINE = 64 * 1024

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def default(cls) -> StartupHistory:
        from backends.core.paths import state_dir

        return cls(state_dir() / cls.FILENAME)

    def append(self, server: str, durations: dict[str, float], ok: bool, at: float, model: str | None = None) -> None:
        start = {"server": server, "model": model, "at": at, "ok": ok,
                  "phases": {p: round(float(s), 3) for p, s in durations.items() if p in WORK_PHASES}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            append_line(self.path, json.dumps(start, sort_keys=True) + "\n")  # no symlink followed
        except StateWriteError:
            pass  # a full disk costs this start's timings only, never the start

    def starts(self, server: str | None = None, note: Note | None = None) -> list[dict]:
        """The usable starts (of ``server`` when given), oldest first. A line that is not one
        (torn, hand-edited, a phase time that is no duration) costs only itself: it is skipped, and
        ``note`` is told which lines were and why. Only the file's last ``MAX_READ`` bytes are read:
        the medians need the last KEEP starts, and the file only grows."""
        fd = open_state_for_reading(self.path)
        if fd is None:
            return []
        found = read_jsonl(self.path, name=str(self.path), fd=fd, max_bytes=self.MAX_READ, max_line=self.MAX_LINE,
                           over="tail")
        bad = list(found.bad)
        out = []
        for number, rec in found.records:
            why = unusable(rec)
            if why is not None:
                bad.append((number, why))
            elif server is None or rec.get("server") == server:
                out.append(rec)
        if note is not None and (bad or found.lines.long_lines):
            where = "line" if found.lines.numbered else "line (counted from the part read)"
            said = "; ".join(f"{where} {n}: {why}" for n, why in sorted(bad)[:3]) + ("; ..." if len(bad) > 3 else "")
            long = f"{len(found.lines.long_lines)} over-long line(s)" if found.lines.long_lines else ""
            note(f"{self.path}: skipped {len(bad) + len(found.lines.long_lines)} unusable line(s) "
                 f"({'; '.join(p for p in (said, long) if p)}); start ETAs come from the other starts "
                 "(remove those lines to silence this)")
        return out

    def medians(self, server: str, note: Note | None = None) -> dict[str, float]:
        recent = [r for r in self.starts(server, note) if r.get("ok") is True][-self.KEEP:]
        out: dict[str, float] = {}
        for phase in WORK_PHASES:
            values = [float(v) for r in recent if (v := r["phases"].get(phase)) is not None]
            if values:
                out[phase] = round(median(values), 3)
        return out


def unusable(rec: Any) -> str | None:
    """Why a line of startups.jsonl cannot give an ETA (None when it can): every work phase's time
    must be a finite number of seconds from 0 to MAX_PHASE_S. One 400-digit or NaN time would
    otherwise turn every later ETA into an OverflowError or a NaN."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    phases = rec.get("phases")
    if not isinstance(phases, dict):
        return "no \"phases\" object"
    if not isinstance(rec.get("ok", False), bool) or not isinstance(rec.get("server", ""), str):
        return "\"ok\" must be true or false and \"server\" a string"
    for phase in WORK_PHASES:
        value = phases.get(phase)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_PHASE_S:
            return f"{phase} time {shown(value, 40, in_json=True)} is not a duration (0 to {MAX_PHASE_S:.0f} s)"
    return None

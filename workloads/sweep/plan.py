"""What a sweep runs and in which order, and its resumable record on disk. Pure plan, thin store.

Order: the configurations run in rounds, one round per repeat, and every other round runs in
reverse (A B C, C B A, A B C ...). Each config thus meets early and late positions equally often, so
a linear drift of the machine (thermals, fragmentation) cancels out of the comparison, and the
round boundary keeps the same config, which saves a restart per round: with ``R`` repeats of ``n``
configs the sweep restarts ``R * (n - 1) + 1`` times instead of ``R * n``.

On disk (``--out DIR``, default ``state_dir()/runs/<time>-sweep``):

    sweep.json             the plan and status (replaced atomically)
    slots.jsonl            one line per finished slot (done or failed), appended and fsynced
    NN-<config>-rR/bench/  the slot's bench run (run.json, cells.jsonl, responses.jsonl)
    NN-<config>-rR/<time>-eval/   the slot's coding eval run
    lossless-baseline.json the baseline's greedy outputs (a sweep with a baseline; workloads.sweep.lossless)
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from backends.core import read_json, warn
from backends.core import UsageError
from backends.core import INT64_MAX, MAX_NAME, bounded, shown
from backends.core import runs_dir
from backends.core import plain
from backends.core import append_text, check_folder, make_folder
from workloads.bench.plan import BenchPlan
from workloads.runs.checks import MAX_TIME, plausible, read_plan
from workloads.runs.store import JsonManifest, read_jsonl, run_folder

_RESUME_HINT = "give the folder a sweep wrote (its --out), or start a new sweep"
SCHEMA = "ddtune.sweep/1"
BASELINE = "baseline"


@dataclass(frozen=True)
class SweepConfig:
    """One configuration: a name (the preset) and its knob values; ``baseline`` = speculation off."""

    name: str
    knobs: dict[str, Any] = field(default_factory=dict)
    baseline: bool = False

    def to_json(self) -> dict:
        return {"name": self.name, "knobs": dict(self.knobs), "baseline": self.baseline}

    @classmethod
    def from_json(cls, data: dict) -> SweepConfig:
        """A configuration read back (a resume): its name printed on progress lines, so plain and on one
        line (a name holding a line break and an escape sequence forged a line of the sweep's output)."""
        name = data["name"]
        if not isinstance(name, str) or not name or len(name) > MAX_NAME or plain(name, one_line=True) != name:
            raise ValueError(f"configuration name {shown(name, 40)}: not a name ddtune gives (one printable line)")
        knobs = data.get("knobs") or {}
        if not isinstance(knobs, dict):
            raise TypeError(f"configuration {name!r}: knobs {shown(knobs, 40)}: not a table")
        return cls(name, dict(knobs), bool(data.get("baseline", False)))


@dataclass(frozen=True)
class EvalSettings:
    max_tokens: int = 4096
    concurrency: int = 4
    problems: tuple[str, ...] | None = None  # None: every problem

    def to_json(self) -> dict:
        return {"max_tokens": self.max_tokens, "concurrency": self.concurrency,
                "problems": list(self.problems) if self.problems is not None else None}

    @classmethod
    def from_json(cls, data: dict) -> EvalSettings:
        problems = data.get("problems")
        return cls(plausible(data["max_tokens"], "max_tokens"), plausible(data["concurrency"], "concurrency"),
                   tuple(str(p) for p in problems) if problems else None)


@dataclass(frozen=True)
class Slot:
    """One run of one configuration: position in the order, config name, repeat number (1-based)."""

    index: int
    config: str
    repeat: int

    @property
    def key(self) -> str:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.config)
        return f"{self.index + 1:02d}-{safe}-r{self.repeat}"


@dataclass(frozen=True)
class SweepPlan:
    configs: tuple[SweepConfig, ...]
    bench: BenchPlan
    repeats: int = 1
    eval: EvalSettings | None = None
    warmup_requests: int = 2

    def __post_init__(self) -> None:
        names = [c.name for c in self.configs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise UsageError(f"configuration {dupes[0]!r} is named twice",
                             hint="name each configuration once; use --repeats N to run it several times")
        if not self.configs:
            raise UsageError("a sweep needs at least one configuration",
                             hint="e.g. ddtune sweep b8-t4-w2048 b16-t4-w2048")
        if self.repeats < 1:
            raise UsageError(f"--repeats must be at least 1, got {self.repeats}", hint="--repeats 3")

    def config(self, name: str) -> SweepConfig:
        return next(c for c in self.configs if c.name == name)

    def schedule(self) -> list[Slot]:
        """Every slot in run order: serpentine rounds (A B C, C B A, ...)."""
        slots: list[Slot] = []
        names = [c.name for c in self.configs]
        for r in range(self.repeats):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                slots.append(Slot(len(slots), name, r + 1))
        return slots

    def restarts(self) -> int:
        """Restarts the schedule needs, counting the first start."""
        slots = self.schedule()
        return sum(1 for i, s in enumerate(slots) if i == 0 or slots[i - 1].config != s.config)

    def to_json(self) -> dict:
        return {"configs": [c.to_json() for c in self.configs], "bench": self.bench.to_json(),
                "repeats": self.repeats, "eval": self.eval.to_json() if self.eval else None,
                "warmup_requests": self.warmup_requests}

    @classmethod
    def from_json(cls, data: dict) -> SweepPlan:
        return cls(tuple(SweepConfig.from_json(c) for c in data["configs"]), BenchPlan.from_json(data["bench"]),
                   plausible(data.get("repeats", 1), "repeats"),
                   EvalSettings.from_json(data["eval"]) if data.get("eval") else None,
                   plausible(data.get("warmup_requests", 2), "requests", "warmup_requests", low=0))


@dataclass(frozen=True)
class SlotRecord:
    """What one finished slot left: status ``done`` or ``failed`` (with ``reason``) and where its data is."""

    slot: Slot
    status: str
    reason: str | None = None
    bench_dir: str | None = None
    eval_dir: str | None = None
    server: dict = field(default_factory=dict)
    started_at: float = 0.0
    finished_at: float = 0.0
    lossless: dict | None = None  # the lossless check (workloads.sweep.lossless), when the plan has a baseline

    def to_json(self) -> dict:
        data = asdict(self)
        data["slot"] = {"index": self.slot.index, "config": self.slot.config, "repeat": self.slot.repeat,
                        "key": self.slot.key}
        return data

    @classmethod
    def from_json(cls, data: dict) -> SlotRecord:
        s = data["slot"]
        return cls(Slot(bounded(s["index"], 0, INT64_MAX, "index", True), str(s["config"]),
                        plausible(s["repeat"], "repeats", "repeat")), str(data["status"]),
                   data.get("reason"), data.get("bench_dir"), data.get("eval_dir"), dict(data.get("server") or {}),
                   bounded(data.get("started_at") or 0.0, 0, MAX_TIME, "started_at"),
                   bounded(data.get("finished_at") or 0.0, 0, MAX_TIME, "finished_at"),
                   data.get("lossless") if isinstance(data.get("lossless"), dict) else None)


class SweepStore(JsonManifest):
    """A sweep's directory: the manifest and the slot records; slot data lives in sub-directories."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.manifest = self.path / "sweep.json"
        self.slots_file = self.path / "slots.jsonl"

    @classmethod
    def create(cls, plan: SweepPlan, meta: dict, out: str | Path | None = None, kind: str = "sweep") -> SweepStore:
        path = run_folder(out, "sweep.json", kind, "sweep")
        store = cls(path)
        store.write({"schema": SCHEMA, "kind": kind, "id": path.name, "status": "running", "plan": plan.to_json(),
                     "started_at": time.time(), "finished_at": None, **meta})
        return store

    @classmethod
    def open(cls, path: str | Path | None, kind: str = "sweep") -> SweepStore:
        """An existing sweep: ``path``, or the latest one under runs/ when None."""
        if path is None:
            found = sorted(p for p in runs_dir().glob(f"*-{kind}") if (p / "sweep.json").is_file())
            if not found:
                raise UsageError(f"--resume: no {kind} to resume under {runs_dir()}",
                                 hint=f"give its folder with --out DIR, or start a new {kind}")
            path = found[-1]
        path = Path(path).expanduser()
        check_folder(path)
        if not (path / "sweep.json").is_file():
            raise UsageError(f"--resume: {path} holds no sweep (no sweep.json)",
                             hint="give the folder a sweep wrote (its --out), or start a new one")
        return cls(path)

    def read(self) -> dict:
        doc = read_json(self.manifest, UsageError, hint=_RESUME_HINT)
        if not isinstance(doc, dict):
            raise UsageError(f"{self.manifest}: expected a JSON object", hint=_RESUME_HINT)
        return doc

    def plan(self) -> SweepPlan:
        doc = self.read()  # a hand-edited or corrupt plan: one line naming the manifest
        return read_plan(f"{self.manifest}: plan", lambda: SweepPlan.from_json(doc["plan"]), "sweep plan", _RESUME_HINT)

    def records(self) -> list[SlotRecord]:
        out = []
        bad = []
        for n, data in enumerate(read_jsonl(self.slots_file), 1):
            try:
                out.append(SlotRecord.from_json(data))
            except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
                bad.append(f"record {n}: {type(exc).__name__}: {shown(str(exc), 80)}")
        if bad:  # one bad line costs only itself: its slot runs again
            warn(f"{self.slots_file}: skipped {len(bad)} unusable slot record(s) ({bad[0]}"
                 f"{'; ...' if len(bad) > 1 else ''}); their slots run again")
        return out

    def append(self, record: SlotRecord) -> None:
        append_text(self.slots_file, json.dumps(record.to_json()) + "\n")

    def slot_dir(self, slot: Slot) -> Path:
        return make_folder(self.path / slot.key)

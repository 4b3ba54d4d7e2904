"""Read what ``ddtune report`` compares: sweep folders, bench run folders, bench ``--out`` JSON files
and eval run folders, into plain ``RunData`` records labelled by configuration."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from backends.core import read_json, read_jsonl, warn
from backends.core import UsageError
from backends.core import expect, fail
from workloads.runs.checks import FIX as _FIX
from workloads.runs.checks import cell as _cell
from workloads.runs.checks import counts as _counts
from workloads.runs.checks import field as _field
from workloads.runs.checks import numbers as _numbers
from workloads.runs.checks import response as _response
from workloads.runs.store import kept_filter

_HINT = "give a run folder, a sweep folder or a run JSON file"


@dataclass(frozen=True)
class RunData:
    """One measured run of one configuration (a sweep slot, or a bench run on its own)."""

    label: str
    repeat: int
    source: str
    cells: tuple[dict, ...] = ()
    responses: tuple[dict, ...] = ()
    eval_summary: dict | None = None
    baseline: bool = False
    order: int = 0
    knobs: dict | None = None  # the knob values it ran with (None: not recorded); a baseline: speculation off
    facts: RunFacts | None = None  # what the papers' comparison needs (None: a file without its run)


@dataclass(frozen=True)
class RunFacts:
    """What a run measured on, as far as comparing its acceptance with the papers goes."""

    prompts: str = "story"               # the plan's first source: a cell written before sources has it
    model: str | None = None             # /server_info's model_path (or served name)
    algorithm: str | None = None         # its speculative_algorithm (None: not speculative, or not known)
    block_size: int | None = None        # its speculative_num_draft_tokens
    ignore_eos: bool = False
    datasets: dict[str, str] = field(default_factory=dict)  # source -> the published dataset it is


def cell_key(run: RunData, record: dict):
    """The key of one of ``run``'s cells (or of a response, which carries the same fields): prompts x
    context x concurrency x rate (workloads/runs/cellkey.py); an older record has its run's first source."""
    from workloads.runs.cellkey import CellKey

    return CellKey.of(record, run.facts.prompts if run.facts is not None else "")


def run_facts(run: dict) -> RunFacts:
    """A run.json's facts (the server it ran on, the plan's stops, its prompt sets' datasets)."""
    from workloads.runs.cellkey import plan_prompts

    found = run.get("plan")
    plan: dict = found if isinstance(found, dict) else {}
    server = run.get("server_on_resume") or run.get("server") or {}
    found = server.get("server_info") if isinstance(server, dict) else None
    info: dict = found if isinstance(found, dict) else {}
    text = lambda key: str(info[key]) if isinstance(info.get(key), (str, int)) else None  # noqa: E731
    block = info.get("speculative_num_draft_tokens")
    legacy = "prompts" not in plan and not plan.get("coding")  # the old plain matrix sent ignore_eos
    sets = run.get("prompt_sets")
    datasets = {str(s["name"]): str(s["dataset"]) for s in (sets if isinstance(sets, list) else [])
                if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("dataset"), str)}
    return RunFacts(plan_prompts(plan), text("model_path") or text("served_model_name"),
                    text("speculative_algorithm"), block if isinstance(block, int) and not isinstance(block, bool)
                    else None, bool(plan.get("ignore_eos", legacy)), datasets)


@dataclass(frozen=True)
class Failure:
    label: str
    repeat: int
    reason: str
    source: str


@dataclass(frozen=True)
class Restart:
    label: str
    seconds: float
    phases: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Lossless:
    """One slot's lossless check (workloads.sweep.lossless): status recorded, compared, error or
    "no baseline yet"; prompts, diverged and first only when compared."""

    label: str
    repeat: int
    status: str
    prompts: int = 0
    diverged: int = 0
    first: tuple[int | None, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Placement:
    """Where one run of a parallel sweep ran: its lane, the GPUs it was given and what they are
    (backends.machine.gpuset.GpuIdentity as JSON: index, uuid, name, clocks; None where unknown)."""

    label: str
    repeat: int
    lane: int
    gpus: tuple[str, ...]
    devices: tuple[dict, ...] = ()
    status: str = "done"
    shared: bool = False   # its GPU ran another lane's server too (--share-gpu): throughput interfered


@dataclass(frozen=True)
class Inputs:
    runs: tuple[RunData, ...]
    failures: tuple[Failure, ...]
    restarts: tuple[Restart, ...]
    sweep_seconds: float | None
    lossless: tuple[Lossless, ...] = ()
    placements: tuple[Placement, ...] = ()


def _json(path: Path) -> dict:
    return expect(str(path), "document", read_json(path, UsageError, hint=_HINT), dict, _HINT, UsageError, True)


def read_run_file(path: Path) -> dict:
    """A run.json (or any JSON object file): UsageError naming the file when it is not one."""
    return _json(path)


def read_cells(path: Path) -> tuple[dict, ...]:
    """A cells.jsonl, every record checked (UsageError naming the file, line and field)."""
    return tuple(_cell(where, c) for where, c in _jsonl(path))


def _jsonl(path: Path) -> list[tuple[str, dict]]:
    """(where, record) for each JSON object line; a missing file has none. Lines that are not
    JSON objects are skipped, as a torn last line from a crash is."""
    if not os.path.lexists(path):
        return []
    found = read_jsonl(path, UsageError, hint=_HINT)
    found.refuse_binary(UsageError)
    if (said := found.note()) is not None:
        warn(said)
    return [(f"{path} line {n}", value) for n, value in found.records if isinstance(value, dict)]


def knob_label(knobs: dict | None) -> str | None:
    """b8-t4-w2048 style label from knob values (the preset naming), then any other knob set
    (``b8-t4-w2048,block_size=32``), so runs of a declared knob never share a label. Without a
    budget or a topk (plain DFlash), the knobs that are set by name: ``window=2048``."""
    if not knobs:
        return None
    b, t, w = knobs.get("budget"), knobs.get("topk"), knobs.get("window")
    others = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(knobs.items())
              if k not in ("budget", "topk", "window") and v is not None]
    if b is None and t is None and w is None and not others:
        return None
    if b is None or t is None:  # "b--t--w2048" read as nothing: name only the knobs that are set
        return ",".join([*(f"{k}={v}" for k, v in (("budget", b), ("topk", t), ("window", w)) if v is not None),
                         *others])
    return ",".join([f"b{b}-t{t}-" + (f"w{w}" if w is not None else "nowindow"), *others])


def _run_label(run: dict, fallback: str, where: str = "run.json") -> tuple[str, bool]:
    sweep = _field(where, run, "sweep", dict) or {}
    config = _field(f"{where} sweep", sweep, "config", dict) or {}
    if config.get("name"):
        return str(config["name"]), bool(config.get("baseline"))
    server = _field(where, run, "server", dict) or {}
    return knob_label(_field(f"{where} server", server, "knobs", dict)) or fallback, False


def _run_knobs(run: dict, where: str = "run.json") -> dict | None:
    """The knob values a run measured: its sweep configuration's, else the server's it recorded."""
    sweep = _field(where, run, "sweep", dict) or {}
    config = _field(f"{where} sweep", sweep, "config", dict) or {}
    knobs = _field(f"{where} sweep config", config, "knobs", dict)
    if knobs is None:
        server = _field(where, run, "server", dict) or {}
        knobs = _field(f"{where} server", server, "knobs", dict)
    return dict(knobs) if knobs is not None else None


def read_bench_dir(path: Path, label: str | None = None, repeat: int = 1, baseline: bool = False,
                   order: int = 0) -> RunData:
    run = _json(path / "run.json")
    found_label, found_baseline = _run_label(run, path.name, str(path / "run.json"))
    cells = read_cells(path / "cells.jsonl")
    kept = kept_filter(path)  # not the answers of an attempt killed mid-cell: its cell was redone
    responses = tuple(_response(where, r) for where, r in _jsonl(path / "responses.jsonl") if kept is None or kept(r))
    return RunData(label or found_label, repeat, str(path), cells, responses, None, baseline or found_baseline, order,
                   _run_knobs(run, str(path / "run.json")), run_facts(run))


def _eval_summary(path: Path) -> dict | None:
    if not path or not (path / "run.json").is_file():
        return None
    return _counts(str(path / "run.json"), _json(path / "run.json"), "summary")


def _plan_configs(path: Path, doc: dict) -> dict[str, dict]:
    where = str(path / "sweep.json")
    plan = _field(where, doc, "plan", dict) or {}
    configs = _field(f"{where} plan", plan, "configs", list) or []
    out = {}
    for i, config in enumerate(configs):
        at = f"{where} plan configs[{i}]"
        expect(at, "config", config, dict, _FIX, UsageError, True)
        out[_field(at, config, "name", str, required=True)] = config
    return out


def read_sweep(path: Path, order0: int = 0) -> Inputs:
    doc = _json(path / "sweep.json")
    configs = _plan_configs(path, doc)
    order = {name: i for i, name in enumerate(configs)}
    runs, failures, restarts, checks, placements = [], [], [], [], []
    records = _jsonl(path / "slots.jsonl")
    for where, rec in records:
        slot = _field(where, rec, "slot", dict, required=True)
        name = _field(f"{where} slot", slot, "config", str, required=True)
        repeat = _field(f"{where} slot", slot, "repeat", int, minimum=1) or 1
        key = _field(f"{where} slot", slot, "key", str)
        server = _field(where, rec, "server", dict) or {}
        placement = _placement(where, server, name, repeat, str(rec.get("status") or "failed"))
        if placement is not None:
            placements.append(placement)
        restart_s = _field(f"{where} server", server, "restart_s", float, minimum=0)
        _numbers(f"{where} server", server, "phases")
        if server.get("restarted") and restart_s is not None:
            restarts.append(Restart(name, float(restart_s), dict(server.get("phases") or {})))
        _field(where, rec, "finished_at", float)
        check = _lossless(where, rec, name, repeat)
        if check is not None:
            checks.append(check)
        if rec.get("status") != "done":
            failures.append(Failure(name, repeat, str(rec.get("reason") or "failed"), str(path / str(key))))
            continue
        baseline = bool((configs.get(name) or {}).get("baseline"))
        bench_dir = _field(where, rec, "bench_dir", str)
        if not bench_dir and key is None:
            raise fail(where, "slot", "a finished slot needs 'bench_dir' or 'slot.key'", _FIX, UsageError)
        bench = read_bench_dir(Path(bench_dir) if bench_dir else path / str(key) / "bench",
                               name, repeat, baseline, order0 + order.get(name, len(order)))
        eval_dir = _field(where, rec, "eval_dir", str)
        knobs = (configs.get(name) or {}).get("knobs")
        runs.append(RunData(bench.label, repeat, bench.source, bench.cells, bench.responses,
                            _eval_summary(Path(eval_dir)) if eval_dir else None, baseline, bench.order,
                            dict(knobs) if isinstance(knobs, dict) else bench.knobs, bench.facts))
    started = _field(str(path / "sweep.json"), doc, "started_at", float)
    finished = _field(str(path / "sweep.json"), doc, "finished_at", float)
    span = [r["finished_at"] for _, r in records if r.get("finished_at")]
    end = finished or (max(span) if span else None)
    seconds = end - started if started is not None and end is not None else None
    return Inputs(tuple(runs), tuple(failures), tuple(restarts), seconds, tuple(checks), tuple(placements))


def _placement(where: str, server: dict, name: str, repeat: int, status: str) -> Placement | None:
    """The lane of a parallel sweep's run (None for a serial sweep's)."""
    lane = _field(f"{where} server", server, "lane", int, minimum=0)
    if lane is None:
        return None
    gpus = _field(f"{where} server", server, "gpus", list) or []
    devices = _field(f"{where} server", server, "gpu_devices", list) or []
    shared = _field(f"{where} server", server, "shared_gpu", bool) or False
    return Placement(name, repeat, int(lane), tuple(str(g) for g in gpus),
                     tuple(d for d in devices if isinstance(d, dict)), status, shared)


def _lossless(where: str, rec: dict, name: str, repeat: int) -> Lossless | None:
    check = _field(where, rec, "lossless", dict)
    if check is None:
        return None
    at = f"{where} lossless"
    status = _field(at, check, "status", str, required=True)
    if status != "compared":
        return Lossless(name, repeat, status, error=_field(at, check, "error", str))
    prompts = _field(at, check, "prompts", int, minimum=1, required=True)
    diverged = _field(at, check, "diverged", int, minimum=0, required=True)
    first = _field(at, check, "first", list) or []
    if diverged > prompts or any(p is not None and (isinstance(p, bool) or not isinstance(p, int)) for p in first):
        raise fail(at, "field 'diverged'/'first'", "diverged must be <= prompts, first positions integers or null",
                   _FIX, UsageError)
    return Lossless(name, repeat, status, prompts, diverged, tuple(first))


def load_inputs(paths: list[str]) -> Inputs:
    """Every RUN argument: a sweep folder, a bench run folder, an eval run folder or a bench JSON file."""
    runs: list[RunData] = []
    failures: list[Failure] = []
    restarts: list[Restart] = []
    checks: list[Lossless] = []
    placements: list[Placement] = []
    seconds = 0.0
    any_sweep = False
    evals: dict[str, dict] = {}
    for raw in paths:
        path = Path(raw).expanduser()
        if (path / "sweep.json").is_file():
            found = read_sweep(path, order0=len(runs) * 100)
            runs += found.runs
            failures += found.failures
            restarts += found.restarts
            checks += found.lossless
            placements += found.placements
            seconds += found.sweep_seconds or 0.0
            any_sweep = True
        elif (path / "run.json").is_file():
            run = _json(path / "run.json")
            if run.get("kind") == "eval":
                label, _ = _run_label(run, path.name, str(path / "run.json"))
                evals[label] = _counts(str(path / "run.json"), run, "summary") or {}
                continue
            runs.append(_repeat_of(read_bench_dir(path, order=len(runs) * 100), runs))
        elif path.is_file():
            doc = _json(path)
            if not isinstance(doc.get("run"), dict) or not isinstance(doc.get("cells"), list):
                raise UsageError(f"{path}: not a bench run file (expected \"run\" and \"cells\")",
                                 hint="use the file 'ddtune bench --out FILE' wrote, or the run folder")
            label, baseline = _run_label(doc["run"], path.stem, f"{path} run")
            cells = tuple(_cell(f"{path} cells[{n}]", c) for n, c in enumerate(doc["cells"]))
            runs.append(_repeat_of(RunData(label, 1, str(path), cells, (), None, baseline, len(runs) * 100,
                                           _run_knobs(doc["run"], f"{path} run"), run_facts(doc["run"])), runs))
        else:
            raise UsageError(f"{path}: no such run",
                             hint="give a sweep folder (sweep.json), a run folder (run.json) or a bench JSON file; "
                                  "runs live under $DDTUNE_STATE_DIR/runs")
    if evals:
        runs = [replace(r, eval_summary=r.eval_summary or evals.get(r.label)) for r in runs]
    return Inputs(tuple(runs), tuple(failures), tuple(restarts), seconds if any_sweep else None, tuple(checks),
                  tuple(placements))


def _repeat_of(run: RunData, earlier: list[RunData]) -> RunData:
    """Runs given separately with the same label are repeats of one configuration."""
    n = 1 + sum(1 for r in earlier if r.label == run.label)
    return replace(run, repeat=n)

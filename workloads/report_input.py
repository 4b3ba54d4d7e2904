"""Read what ``ddtune report`` compares: sweep folders, bench run folders, bench ``--out`` JSON files
and eval run folders, into plain ``RunData`` records labelled by configuration."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from backends.errors import UsageError
from workloads.results import kept_filter, read_jsonl


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
class Inputs:
    runs: tuple[RunData, ...]
    failures: tuple[Failure, ...]
    restarts: tuple[Restart, ...]
    sweep_seconds: float | None


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror}", hint="give a run folder, a sweep folder or a run JSON file")
    except ValueError as exc:
        raise UsageError(f"{path}: not JSON: {exc}", hint="give a run folder, a sweep folder or a run JSON file")
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object", hint="give a run folder, a sweep folder or a run JSON file")
    return data


def knob_label(knobs: dict | None) -> str | None:
    """b8-t4-w2048 style label from knob values (the preset naming), when the knobs are the usual three."""
    if not knobs:
        return None
    b, t, w = knobs.get("budget"), knobs.get("topk"), knobs.get("window")
    if b is None and t is None and w is None:
        return None
    return f"b{b if b is not None else '-'}-t{t if t is not None else '-'}-" + (f"w{w}" if w is not None else "nowindow")


def _run_label(run: dict, fallback: str) -> tuple[str, bool]:
    sweep = run.get("sweep") or {}
    config = sweep.get("config") or {}
    if config.get("name"):
        return str(config["name"]), bool(config.get("baseline"))
    server = run.get("server") or {}
    return knob_label(server.get("knobs")) or fallback, False


def read_bench_dir(path: Path, label: str | None = None, repeat: int = 1, baseline: bool = False,
                   order: int = 0) -> RunData:
    run = _json(path / "run.json")
    found_label, found_baseline = _run_label(run, path.name)
    kept = kept_filter(path)  # not the answers of an attempt killed mid-cell: its cell was redone
    responses = tuple(r for r in read_jsonl(path / "responses.jsonl") if kept is None or kept(r))
    return RunData(label or found_label, repeat, str(path), tuple(read_jsonl(path / "cells.jsonl")),
                   responses, None, baseline or found_baseline, order)


def _eval_summary(path: Path) -> dict | None:
    if not path or not (path / "run.json").is_file():
        return None
    summary = _json(path / "run.json").get("summary")
    return summary if isinstance(summary, dict) else None


def read_sweep(path: Path, order0: int = 0) -> Inputs:
    doc = _json(path / "sweep.json")
    configs = {c["name"]: c for c in (doc.get("plan") or {}).get("configs", [])}
    order = {name: i for i, name in enumerate(configs)}
    runs, failures, restarts = [], [], []
    records = read_jsonl(path / "slots.jsonl")
    for rec in records:
        slot = rec.get("slot") or {}
        name, repeat = str(slot.get("config")), int(slot.get("repeat", 1))
        server = rec.get("server") or {}
        if server.get("restarted") and isinstance(server.get("restart_s"), (int, float)):
            restarts.append(Restart(name, float(server["restart_s"]), dict(server.get("phases") or {})))
        if rec.get("status") != "done":
            failures.append(Failure(name, repeat, str(rec.get("reason") or "failed"), str(path / str(slot.get("key")))))
            continue
        baseline = bool((configs.get(name) or {}).get("baseline"))
        bench = read_bench_dir(Path(rec["bench_dir"]) if rec.get("bench_dir") else path / slot["key"] / "bench",
                               name, repeat, baseline, order0 + order.get(name, len(order)))
        eval_dir = rec.get("eval_dir")
        runs.append(RunData(bench.label, repeat, bench.source, bench.cells, bench.responses,
                            _eval_summary(Path(eval_dir)) if eval_dir else None, baseline, bench.order))
    started, finished = doc.get("started_at"), doc.get("finished_at")
    span = [r.get("finished_at") for r in records if r.get("finished_at")]
    end = finished or (max(span) if span else None)
    seconds = end - started if isinstance(started, (int, float)) and isinstance(end, (int, float)) else None
    return Inputs(tuple(runs), tuple(failures), tuple(restarts), seconds)


def load_inputs(paths: list[str]) -> Inputs:
    """Every RUN argument: a sweep folder, a bench run folder, an eval run folder or a bench JSON file."""
    runs: list[RunData] = []
    failures: list[Failure] = []
    restarts: list[Restart] = []
    seconds = 0.0
    any_sweep = False
    evals: dict[str, dict] = {}
    for i, raw in enumerate(paths):
        path = Path(raw).expanduser()
        if (path / "sweep.json").is_file():
            found = read_sweep(path, order0=len(runs) * 100)
            runs += found.runs
            failures += found.failures
            restarts += found.restarts
            seconds += found.sweep_seconds or 0.0
            any_sweep = True
        elif (path / "run.json").is_file():
            run = _json(path / "run.json")
            if run.get("kind") == "eval":
                label, _ = _run_label(run, path.name)
                evals[label] = run.get("summary") or {}
                continue
            runs.append(_repeat_of(read_bench_dir(path, order=len(runs) * 100), runs))
        elif path.is_file():
            doc = _json(path)
            if not isinstance(doc.get("run"), dict) or not isinstance(doc.get("cells"), list):
                raise UsageError(f"{path}: not a bench run file (expected \"run\" and \"cells\")",
                                 hint="use the file 'ddtune bench --out FILE' wrote, or the run folder")
            label, baseline = _run_label(doc["run"], path.stem)
            runs.append(_repeat_of(RunData(label, 1, str(path), tuple(doc["cells"]), (), None, baseline,
                                           len(runs) * 100), runs))
        else:
            raise UsageError(f"{path}: no such run", hint="give a sweep folder (sweep.json), a run folder (run.json) "
                                                          "or a bench JSON file; runs live under $DDTUNE_STATE_DIR/runs")
    if evals:
        runs = [RunData(r.label, r.repeat, r.source, r.cells, r.responses, r.eval_summary or evals.get(r.label),
                        r.baseline, r.order) for r in runs]
    return Inputs(tuple(runs), tuple(failures), tuple(restarts), seconds if any_sweep else None)


def _repeat_of(run: RunData, earlier: list[RunData]) -> RunData:
    """Runs given separately with the same label are repeats of one configuration."""
    n = 1 + sum(1 for r in earlier if r.label == run.label)
    return RunData(run.label, n, run.source, run.cells, run.responses, run.eval_summary, run.baseline, run.order)

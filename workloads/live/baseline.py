"""The no-speculation baseline tok/s the console draws as a reference line, when one is known.

Found among saved results (``runs/``), newest first, for the same model on the same host at the
load's concurrency:

- a load run (``ddtune load`` or the console's) of a server without speculative decoding
  (``server.speculative`` false): its ``summary.output_tok_s``;
- a sweep's ``baseline`` configuration (speculation off): the mean ``output_tok_s`` of its bench
  cells at that concurrency (the shortest context, the nearest to the coding load's prompts).

Reads files: call it from a worker thread. Unreadable or foreign files are passed over; none found
is None, and the console then draws no line.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from backends.core import DdtuneError
from backends.core import runs_dir
from workloads.report.inputs import read_cells, read_run_file
from workloads.runs.store import read_jsonl

SCAN_LIMIT = 200  # newest entries of runs/ looked at


@dataclass(frozen=True)
class NoSpecBaseline:
    tok_s: float
    source: str   # "load run <id>" or "sweep <id>"
    path: str


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        return None
    return float(value)


def _obj(doc: dict, key: str) -> dict:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _models(server: object) -> set[str]:
    """The names a run's server went by: /server_info's model_path and served name, server.json's model."""
    if not isinstance(server, dict):
        return set()
    info, config = _obj(server, "server_info"), _obj(_obj(server, "state"), "config")
    found = (info.get("model_path"), info.get("served_model_name"), config.get("model"))
    return {str(m) for m in found if isinstance(m, str) and m}


def _host(doc: dict) -> str | None:
    host = doc.get("host")
    return host.get("hostname") if isinstance(host, dict) else None


def _from_load(path: Path, models: set[str], concurrency: int, hostname: str) -> NoSpecBaseline | None:
    run = read_run_file(path / "run.json")
    server = run.get("server")
    plan, summary = _obj(run, "plan"), _obj(run, "summary")
    if (run.get("kind") != "load" or not isinstance(server, dict) or server.get("speculative") is not False
            or plan.get("concurrency") != concurrency or _host(run) != hostname or not _models(server) & models):
        return None
    tok_s = _number(summary.get("output_tok_s"))
    return NoSpecBaseline(tok_s, f"load run {run.get('id', path.name)}", str(path)) if tok_s else None


def _from_sweep(path: Path, models: set[str], concurrency: int, hostname: str) -> NoSpecBaseline | None:
    doc = read_run_file(path / "sweep.json")
    configs = _obj(doc, "plan").get("configs")
    if not isinstance(configs, list):
        return None
    baselines = {c.get("name") for c in configs if isinstance(c, dict) and c.get("baseline")}
    if not baselines or doc.get("model") not in models or _host(doc) != hostname:
        return None
    cells: list[dict] = []
    for record in read_jsonl(path / "slots.jsonl"):
        slot = _obj(record, "slot")
        bench = record.get("bench_dir")
        key = slot.get("key")
        where = Path(bench) if isinstance(bench, str) else (path / key / "bench" if isinstance(key, str) else None)
        if record.get("status") == "done" and slot.get("config") in baselines and where is not None:
            cells += [c for c in read_cells(where / "cells.jsonl") if c.get("concurrency") == concurrency]
    if not cells:
        return None
    shortest = min(c.get("context", 0) for c in cells)
    rates = [r for c in cells if c.get("context", 0) == shortest and (r := _number(c.get("output_tok_s")))]
    if not rates:
        return None
    return NoSpecBaseline(sum(rates) / len(rates), f"sweep {doc.get('id', path.name)}", str(path))


def find_no_spec_baseline(models: set[str], concurrency: int, hostname: str | None = None,
                          root: Path | None = None) -> NoSpecBaseline | None:
    """The newest no-speculation tok/s for one of ``models`` on ``hostname`` (this host) at
    ``concurrency``; None when the saved results hold none."""
    hostname = hostname or socket.gethostname()
    root = root or runs_dir()
    try:
        entries = sorted((p for p in root.iterdir() if p.is_dir()), reverse=True)[:SCAN_LIMIT]
    except OSError:
        return None
    for path in entries:
        try:
            if (path / "sweep.json").is_file():
                found = _from_sweep(path, models, concurrency, hostname)
            elif (path / "run.json").is_file():
                found = _from_load(path, models, concurrency, hostname)
            else:
                continue
        except (DdtuneError, OSError):
            continue  # a corrupt or foreign entry is passed over
        if found is not None:
            return found
    return None

"""``ddtune bench`` as one call: ``run_bench(BenchSpec(...), on_event) -> BenchOutcome``.

The spec is what the command line says; the use case refuses what does not go together, reads the
prompt sets (a bad one refused before anything is sent, the records it skipped reported as
``SetSkipped``), runs or continues the matrix (``BenchProgress`` per step of a cell), and writes
``out`` (checked first) with the document ``--json`` prints.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from backends.core import UsageError
from backends.core import check_output, write_atomic
from workloads.bench.matrix import BenchProgress
from workloads.bench.plan import BenchPlan
from workloads.bench.session import bench_run, load_sets

DEFAULT_CONTEXTS = (60, 1024, 4096, 8192)


@dataclass(frozen=True)
class BenchSpec:
    url: str
    api_key: str | None = None
    contexts: tuple[int, ...] | None = None   # None: as written with prompts, else DEFAULT_CONTEXTS
    concurrency: tuple[int, ...] = (1, 8, 32, 64)
    max_tokens: int = 512
    coding: bool = False
    requests_per_cell: int | None = None
    warmup: int = 1
    release: str = "wave"
    traffic: Mapping[str, Any] = field(default_factory=dict)  # BenchPlan's traffic fields (prompts, rates, SLO)
    resume: str | None = None                 # a run directory, or "latest"
    log_path: str | None = None               # the server's log (acceptance's last source)
    out: str | None = None                    # also write the whole run here

    def plan(self) -> BenchPlan:
        prompts = self.traffic.get("prompts")
        if self.coding and prompts:
            raise UsageError("--coding is the built-in coding set: name it among --prompts instead",
                             hint="ddtune bench --prompts coding " + " ".join(prompts))
        contexts = self.contexts if self.contexts is not None else ((0,) if prompts else DEFAULT_CONTEXTS)
        return BenchPlan(tuple(dict.fromkeys(contexts)), tuple(dict.fromkeys(self.concurrency)), self.max_tokens,
                         self.coding, self.requests_per_cell, self.warmup, self.release, **self.traffic)


@dataclass(frozen=True)
class SetSkipped:
    """Records a prompt source could not read (the rest is sent)."""

    name: str
    read: int
    skipped: tuple[str, ...]

    def lines(self) -> str:
        """What a command says of it: each record left out, then the count."""
        return "".join(f"prompts: {line}\n" for line in self.skipped) + \
            f"prompts: {self.name}: {self.read} read, {len(self.skipped)} skipped\n"


BenchEvent = BenchProgress | SetSkipped


@dataclass(frozen=True)
class BenchOutcome:
    run: dict                  # run.json as written, with its folder ("dir")
    cells: tuple[dict, ...]    # cells.jsonl's kept cells (docs/results-schema.md)

    def to_json(self) -> dict:
        """The document ``--json`` prints and ``out`` holds (the same as ever)."""
        return {"run": self.run, "cells": list(self.cells)}

    @property
    def all_failed(self) -> str | None:
        """The first error when every measured request failed (a server that answers nothing usable:
        a failed run), else None."""
        cells = self.cells
        if not cells or any(c.get("errors", 0) < c.get("requests", 0) or not c.get("requests") for c in cells):
            return None
        return str(cells[0].get("first_error") or "?")


def run_bench(spec: BenchSpec, on_event: Callable[[BenchEvent], object] | None = None) -> BenchOutcome:
    """Run (or continue) the bench the spec asks for (blocking; Ctrl-C leaves a resumable run)."""
    emit = on_event or (lambda event: None)
    plan = spec.plan()
    if spec.out:
        check_output(spec.out)  # refused now (a link, another user's folder), not after the run
    sets = None
    if not spec.resume:
        sets, _ = load_sets(plan)  # a bad source is refused before anything is sent
        for prompts in sets.values():
            if prompts.skipped:
                emit(SetSkipped(prompts.name, len(prompts.records), tuple(prompts.skipped)))

    def progress(step: BenchProgress) -> None:
        emit(step)

    doc = asyncio.run(bench_run(spec.url, plan, api_key=spec.api_key, resume=spec.resume, progress=progress,
                                log_path=spec.log_path, sets=sets))
    outcome = BenchOutcome(doc["run"], tuple(doc["cells"]))
    if spec.out:
        write_atomic(spec.out, json.dumps(outcome.to_json(), indent=2) + "\n")
    return outcome

"""Acceptance per dataset, beside the papers, and its drift across concurrency. Pure.

Acceptance is a property of the domain of the generated text, so the report gives it per prompt
source (with the published dataset it is, where it is one), beside the published tau of the matching
row and whether the two are comparable (workloads/report/papers.py). Within one source, context and
rate, acceptance is nearly flat in concurrency (sglang#16818); a spread above 5% between the
concurrencies one configuration measured is flagged: a batch-dependent knob, or a fault.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from workloads.report.inputs import RunData, cell_key
from workloads.report.papers import Verdict, verdict
from workloads.runs.cellkey import CellKey as Cell
from workloads.stats.estimate import Estimate

DRIFT = 0.05


class Row(Protocol):
    """A report row (workloads/report/compare.py's ConfigCell): a configuration's figures in one cell."""

    @property
    def config(self) -> str: ...
    @property
    def cell(self) -> Cell: ...
    @property
    def acceptance(self) -> Estimate | None: ...
    @property
    def acceptance_source(self) -> str | None: ...
    @property
    def tok_s(self) -> Estimate | None: ...


@dataclass(frozen=True)
class DatasetRow:
    config: str
    cell: Cell
    dataset: str | None              # the published dataset the source is (None: none the papers measured)
    acceptance: Estimate | None
    acceptance_source: str | None
    tok_s: Estimate | None
    verdict: Verdict | None          # None: no published row for the dataset


@dataclass(frozen=True)
class Drift:
    config: str
    prompts: str
    context: int
    rate: float | None
    low: tuple[int, float]           # (concurrency, acceptance) at the lowest ...
    high: tuple[int, float]          # ... and the highest

    @property
    def spread(self) -> float:
        return self.high[1] / self.low[1] - 1.0


def _cell_record(runs: list[RunData], cell: Cell) -> tuple[RunData, dict] | None:
    return next(((r, c) for r in runs for c in r.cells if cell_key(r, c) == cell), None)


def dataset_rows(by_config: dict[str, list[RunData]], rows: tuple[Row, ...]) -> tuple[DatasetRow, ...]:
    out = []
    for row in rows:
        found = _cell_record(by_config.get(row.config, []), row.cell)
        if found is None or any(r.baseline for r in by_config[row.config]):
            continue  # the baseline runs without speculation: no acceptance to set beside the papers
        run, record = found
        facts = run.facts
        dataset = facts.datasets.get(row.cell.prompts) if facts is not None else None
        judged = None
        if facts is not None and dataset is not None:
            found_turns = record.get("multi_turn")
            turns = [str(t) for t in found_turns] if isinstance(found_turns, list) else []
            judged = verdict(dataset, model=facts.model, algorithm=facts.algorithm, block_size=facts.block_size,
                             ignore_eos=bool(record.get("ignore_eos", facts.ignore_eos)),
                             concurrency=row.cell.concurrency, context=row.cell.context, multi_turn=turns)
        out.append(DatasetRow(row.config, row.cell, dataset, row.acceptance, row.acceptance_source, row.tok_s,
                              judged))
    return tuple(out)


def drifts(rows: tuple[Row, ...], limit: float = DRIFT) -> tuple[Drift, ...]:
    """Each (configuration, source, context, rate) whose acceptance spread across concurrency passes ``limit``."""
    groups: dict[tuple, list[tuple[int, float]]] = {}
    for row in rows:
        if row.acceptance is not None and row.acceptance.mean > 0:
            key = (row.config, row.cell.prompts, row.cell.context, row.cell.rate)
            groups.setdefault(key, []).append((row.cell.concurrency, row.acceptance.mean))
    out = []
    for (config, prompts, context, rate), points in groups.items():
        if len({c for c, _ in points}) < 2:
            continue
        low, high = min(points, key=lambda p: p[1]), max(points, key=lambda p: p[1])
        if limit < high[1] / low[1] - 1.0 < math.inf:  # a spread past a float (over 5e-324) is no figure to show
            out.append(Drift(config, prompts, context, rate, low, high))
    return tuple(out)

"""The comparison behind ``ddtune report``: per configuration and cell, estimates with 95% intervals,
ratios against the reference, the best configuration per cell and overall with its margin, and
what the restarts cost. Pure: ``build_report(Inputs) -> Report``.

Intervals come from repeats when a configuration ran two or more times (t-interval over the
per-repeat values), else from per-request variation within the single run (see workloads.stats.estimate).
The reference is the speculation-off baseline when there is one (ratios are speedups), else the
first configuration. The overall best is the configuration with the highest geometric mean of its
per-cell throughput ratios over the cells every successful configuration measured. A sweep with a
baseline also carries each configuration's lossless check (greedy outputs against the baseline's).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from workloads.stats.metrics import cell_acceptance, cell_acceptance_source
from workloads.stats.estimate import (Estimate, Ratio, exp, finite, from_repeats, from_samples, geomean, interval,
                                      ratio, t95)
from workloads.report.bands import Band, bands
from workloads.report.datasets import DatasetRow, Drift, dataset_rows, drifts
from workloads.report.inputs import Failure, Inputs, Lossless, Placement, RunData, cell_key
from workloads.runs.cellkey import CellKey

Cell = CellKey  # (context, concurrency, prompts, rate): indexes 0 and 1 as the older (context, concurrency)
METRICS = ("tok_s", "acceptance", "ttft_p50", "ttft_p95", "itl_p50", "itl_p95", "itl_token_p50", "itl_token_p95")


@dataclass(frozen=True)
class ConfigCell:
    config: str
    cell: Cell
    repeats: int
    requests: int
    errors: int
    tok_s: Estimate | None
    acceptance: Estimate | None
    ttft_p50: Estimate | None
    ttft_p95: Estimate | None
    itl_p50: Estimate | None        # step gap: between content chunks
    itl_p95: Estimate | None
    itl_token_p50: Estimate | None  # per token (sglang.bench_serving's ITL)
    itl_token_p95: Estimate | None
    vs_reference: Ratio | None
    # where ``acceptance`` came from: "request" (the requests' own), "counters" / "log" (the server's
    # figure over each cell, never a per-request mean: its interval is from repeats only), "mixed"
    # (its runs differ); None: no acceptance
    acceptance_source: str | None = None
    contended: int = 0   # runs whose cell shared the server with traffic that was not ddtune's


@dataclass(frozen=True)
class Best:
    """The winner of a cell (or overall), the runner-up and the winner's margin over it."""

    cell: Cell | None
    config: str
    value: float
    runner_up: str | None
    margin: Ratio | None


@dataclass(frozen=True)
class PassRate:
    config: str
    passed: int
    total: int
    lo: float
    hi: float


@dataclass(frozen=True)
class RestartCost:
    count: int
    total_s: float
    median_s: float | None
    phases_mean_s: dict
    sweep_s: float | None


@dataclass(frozen=True)
class LosslessRow:
    """A configuration's lossless checks over its runs: prompts compared, how many diverged, the first
    differing positions of those that did, and the runs that were not compared (and why)."""

    config: str
    compared: int          # runs compared with the baseline
    prompts: int
    diverged: int
    first: tuple[int, ...]
    notes: tuple[str, ...]  # "recorded", "no baseline yet", "error: ..." per run not compared

    @property
    def rate(self) -> float | None:
        return self.diverged / self.prompts if self.prompts else None


def _lossless_rows(configs: tuple[str, ...], checks: tuple[Lossless, ...]) -> tuple[LosslessRow, ...]:
    order = list(configs) + [c.label for c in checks if c.label not in configs]
    rows = []
    for config in dict.fromkeys(order):
        mine = [c for c in checks if c.label == config]
        if not mine:
            continue
        done = [c for c in mine if c.status == "compared"]
        notes = [c.status + (f": {c.error}" if c.error else "") for c in mine if c.status != "compared"]
        rows.append(LosslessRow(config, len(done), sum(c.prompts for c in done), sum(c.diverged for c in done),
                                tuple(p for c in done for p in c.first if p is not None), tuple(notes)))
    return tuple(rows)


@dataclass(frozen=True)
class Report:
    configs: tuple[str, ...]
    reference: str | None
    reference_is_baseline: bool
    cells: tuple[Cell, ...]
    rows: tuple[ConfigCell, ...]
    best_per_cell: tuple[Best, ...]
    overall: Best | None
    overall_scores: dict
    pass_rates: tuple[PassRate, ...]
    failures: tuple[Failure, ...]
    restarts: RestartCost
    lossless: tuple[LosslessRow, ...] = ()
    placements: tuple[Placement, ...] = ()   # a parallel sweep: each run's lane and GPUs
    gpu_warnings: tuple[str, ...] = ()       # the lanes' GPUs differ in model or clocks
    knobs: dict = field(default_factory=dict)  # config -> the knob values it ran with (where recorded)
    datasets: tuple[DatasetRow, ...] = ()    # acceptance per prompt source, beside the papers
    drifts: tuple[Drift, ...] = ()           # acceptance spread > 5% across concurrency in one source
    bands: tuple[Band, ...] = ()             # the best configuration per concurrency band

    @property
    def lanes(self) -> int:
        return len({p.lane for p in self.placements})

    def row(self, config: str, cell: Cell | tuple[int, int]) -> ConfigCell | None:
        """The configuration's row in ``cell``; a (context, concurrency) pair finds it in a report of
        one prompt source and no rate."""
        return next((r for r in self.rows if r.config == config and (r.cell == cell or r.cell[:2] == cell)), None)


def wilson(passed: int, total: int) -> tuple[float, float]:
    if total == 0:
        return 0.0, 1.0
    z = 1.96
    p = passed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def _cell_requests(run: RunData, cell: Cell) -> list[dict]:
    return [r for r in run.responses if r.get("ok", True) and isinstance(r.get("context"), int)
            and isinstance(r.get("concurrency"), int) and cell_key(run, r) == cell]


def _per_request_tok_s(responses: list[dict]) -> list[float]:
    out = []
    for r in responses:
        tokens, e2e = r.get("output_tokens"), r.get("e2e_s")
        if isinstance(tokens, (int, float)) and isinstance(e2e, (int, float)) and e2e > 0:
            out.append(tokens / e2e)
    return out


def _per_request_acceptance(responses: list[dict]) -> list[float]:
    out = []
    for r in responses:
        tokens, steps = r.get("output_tokens"), r.get("spec_verify_ct")
        if isinstance(tokens, (int, float)) and isinstance(steps, (int, float)) and steps > 0:
            out.append(tokens / steps)
    return out


def _estimate(values: list, single_samples: list[float] | None) -> Estimate | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    if len(values) >= 2 or single_samples is None:
        return from_repeats(values)
    return from_samples(values[0], single_samples)


def _config_cell(config: str, cell: Cell, runs: list[tuple[RunData, dict]]) -> ConfigCell:
    single = len(runs) == 1
    reqs = _cell_requests(runs[0][0], cell) if single else []
    tok = _estimate([c.get("output_tok_s") for _, c in runs], _per_request_tok_s(reqs) if single else None)
    sources = {s for _, c in runs if (s := cell_acceptance_source(c)) is not None}
    source = None if not sources else sources.pop() if len(sources) == 1 else "mixed"
    per_request = single and source == "request"  # the server's counters or log lines are no per-request sample
    acc = _estimate([cell_acceptance(c) for _, c in runs], _per_request_acceptance(reqs) if per_request else None)
    pick = lambda key, q: from_repeats([v for _, c in runs if (v := (c.get(key) or {}).get(q)) is not None])
    return ConfigCell(config, cell, len(runs), sum(int(c.get("requests") or 0) for _, c in runs),
                      sum(int(c.get("errors") or 0) for _, c in runs), tok, acc, pick("ttft_ms", "p50"),
                      pick("ttft_ms", "p95"), pick("itl_ms", "p50"), pick("itl_ms", "p95"),
                      pick("itl_token_ms", "p50"), pick("itl_token_ms", "p95"), None, source,
                      sum(1 for _, c in runs if c.get("contended") is True))


def _margin(a: Estimate | None, b: Estimate | None) -> Ratio | None:
    return ratio(a, b)


def _overall_margin(pairs: list[tuple[Estimate, Estimate]]) -> Ratio | None:
    """Geometric-mean ratio of a over b across cells, interval from the per-cell relative errors."""
    if not pairs:
        return None
    # log a - log b: a / b can underflow to 0 (or overflow) for extreme values read back from disk
    logs = [math.log(a.mean) - math.log(b.mean) for a, b in pairs if a.mean > 0 and b.mean > 0]
    if not logs:
        return None
    value = finite(exp(sum(logs) / len(logs)))
    if value is None:
        return None
    rel: list[tuple[float, float]] = []
    for a, b in pairs:
        if a.rel_se is None or b.rel_se is None:
            return Ratio(value, None, None)
        rel.append((a.rel_se, b.rel_se))
    se = math.sqrt(sum(x * x + y * y for x, y in rel)) / len(rel)
    z = t95(max(1, min(min(a.df, b.df) for a, b in pairs)))
    return interval(value, se, z)


def build_report(inputs: Inputs) -> Report:
    by_config: dict[str, list[RunData]] = {}
    for run in sorted(inputs.runs, key=lambda r: r.order):
        by_config.setdefault(run.label, []).append(run)
    configs = tuple(by_config)
    baseline = next((c for c in configs if any(r.baseline for r in by_config[c])), None)
    reference = baseline or (configs[0] if configs else None)
    cells: list[Cell] = []
    for runs in by_config.values():
        for run in runs:
            for c in run.cells:
                key = cell_key(run, c)
                if key not in cells:
                    cells.append(key)
    cells.sort(key=CellKey.sort_key)
    rows: list[ConfigCell] = []
    for config, runs in by_config.items():
        for cell in cells:
            found = [(r, c) for r in runs for c in r.cells if cell_key(r, c) == cell]
            if found:
                rows.append(_config_cell(config, cell, found))
    index = {(r.config, r.cell): r for r in rows}
    with_ratio = []
    for r in rows:
        ref = index.get((reference, r.cell)) if reference else None
        vs = ratio(r.tok_s, ref.tok_s) if ref is not None and r.config != reference else None
        with_ratio.append(replace(r, vs_reference=vs))
    rows = with_ratio

    speed = {(r.config, r.cell): r.tok_s for r in rows if r.tok_s is not None}  # measured tok/s only

    best_cells = []
    for cell in cells:
        ranked = sorted(((tok_s, config) for (config, at), tok_s in speed.items() if at == cell),
                        key=lambda m: -m[0].mean)
        if ranked:
            (top_s, top), second = ranked[0], (ranked[1] if len(ranked) > 1 else None)
            best_cells.append(Best(cell, top, top_s.mean, second[1] if second else None,
                                   _margin(top_s, second[0]) if second else None))

    common = [cell for cell in cells if all((c, cell) in speed for c in configs)]
    scores: dict[str, float] = {}
    for config in configs:
        if reference is None:  # no configurations at all
            break
        ref_rows = [(speed[(config, cell)], speed[(reference, cell)]) for cell in common]
        score = geomean([a.mean / b.mean for a, b in ref_rows if b.mean])  # a quotient past a float: left out
        if score is not None:
            scores[config] = score
    overall = None
    if scores:
        ranked_configs = sorted(scores, key=lambda c: -scores[c])
        winner, runner_up = ranked_configs[0], (ranked_configs[1] if len(ranked_configs) > 1 else None)
        margin = None
        if runner_up:
            margin = _overall_margin([(speed[(winner, cell)], speed[(runner_up, cell)]) for cell in common])
        overall = Best(None, winner, scores[winner], runner_up, margin)

    pass_rates = []
    for config, runs in by_config.items():
        passed = total = 0
        for run in runs:
            summaries = ([run.eval_summary] if run.eval_summary
                         else [c["verdicts"] for c in run.cells if c.get("verdicts")])
            for s in summaries:
                passed += int(s.get("pass", 0))
                total += sum(int(v) for v in s.values())
        if total:
            pass_rates.append(PassRate(config, passed, total, *wilson(passed, total)))

    seconds = [r.seconds for r in inputs.restarts]
    phases: dict[str, list[float]] = {}
    for restart in inputs.restarts:
        for p, v in restart.phases.items():
            phases.setdefault(p, []).append(float(v))
    cost = RestartCost(len(seconds), sum(seconds), statistics.median(seconds) if seconds else None,
                       {p: sum(v) / len(v) for p, v in phases.items()}, inputs.sweep_seconds)
    knobs = _knobs(by_config)
    return Report(configs, reference, baseline is not None, tuple(cells), tuple(rows), tuple(best_cells), overall,
                  scores, tuple(pass_rates), inputs.failures, cost, _lossless_rows(configs, inputs.lossless),
                  inputs.placements, _gpu_warnings(inputs.placements), knobs, dataset_rows(by_config, tuple(rows)),
                  drifts(tuple(rows)), bands(by_config, knobs))


def _knobs(by_config: dict[str, list[RunData]]) -> dict[str, dict]:
    """Each configuration's knob values: those of its first run that recorded them."""
    return {config: next(r.knobs for r in runs if r.knobs is not None)
            for config, runs in by_config.items() if any(r.knobs is not None for r in runs)}


def _gpu_warnings(placements: tuple[Placement, ...]) -> tuple[str, ...]:
    """What the GPUs of a parallel sweep's runs do not share (model, clocks, power limit, memory), and
    which GPUs several lanes shared (--share-gpu: their runs' throughput interfered)."""
    from backends.machine import GpuIdentity, differences

    devices = {}
    lanes: dict[str, set[int]] = {}
    for p in placements:
        for d in p.devices:
            ident = GpuIdentity.from_json(d)
            devices[ident.uuid or ident.index] = ident
        if p.shared:
            for gpu in p.gpus:
                lanes.setdefault(gpu, set()).add(p.lane)
    shared = [f"lanes {', '.join(map(str, sorted(idx)))} shared GPU {gpu} (--share-gpu): their runs interfered in "
              "throughput, so compare configurations by their acceptance and within one lane, and measure speed "
              "on GPUs of their own" for gpu, idx in sorted(lanes.items())]
    return tuple(differences(list(devices.values())) + shared)

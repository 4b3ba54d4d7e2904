"""A configuration per concurrency band: which knobs to launch for the concurrency a server sees. Pure.

SGLang's knobs are fixed at launch, so a sweep measured at several concurrencies answers with one
launch profile per band (vLLM PR #49163's rule, ``tune_speculative_k``): per configuration and
concurrency, each repeat's tok/s (the geometric mean of its cells at that concurrency); the score is
the median minus 1.4826 x MAD (the median absolute deviation, scaled to a standard deviation) over at
least ``MIN_REPEATS`` repeats; a configuration whose relative MAD (MAD / median) is above 0.1 is
rejected there (too noisy to trust); among the rest, scores within 1% of the best are ties, and a
tie goes to the cheaper configuration (speculation off, then the smaller budget or block, topk and
window). Neighbouring concurrencies with the same winner make one band.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from workloads.report.inputs import RunData

MIN_REPEATS = 3
MAX_REL_MAD = 0.1
TIE = 0.01
MAD_SCALE = 1.4826


@dataclass(frozen=True)
class Score:
    config: str
    concurrency: int
    values: tuple[float, ...]   # one tok/s per repeat
    median: float
    mad: float
    score: float                # median - 1.4826 x MAD
    rejected: str | None        # why it cannot win here (too few repeats, too noisy); None: it can


@dataclass(frozen=True)
class Band:
    low: int                    # concurrencies low..high (those measured between them)
    high: int
    config: str
    knobs: dict | None          # its knob values (None: not recorded); a baseline: speculation off
    baseline: bool
    scores: tuple[Score, ...]   # at each concurrency of the band, every configuration's

    def up_command(self) -> str:
        """The ``ddtune up`` line that launches it."""
        if self.baseline:
            return "ddtune up --no-speculation"
        if not self.knobs:
            return f"ddtune up  # {self.config}: its knobs were not recorded"
        shown = lambda v: "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)  # noqa: E731
        return "ddtune up " + " ".join(f"--set {k}={shown(v)}" for k, v in self.knobs.items())


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if len(values) == 1:
        return values[0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def score(config: str, concurrency: int, values: list[float], min_repeats: int = MIN_REPEATS) -> Score:
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    rejected = None
    if len(values) < min_repeats:
        rejected = f"{len(values)} repeat(s): the rule needs {min_repeats}"
    elif med <= 0 or mad / med > MAX_REL_MAD:
        rejected = f"relative MAD {mad / med:.2f} > {MAX_REL_MAD}" if med > 0 else "no throughput"
    return Score(config, concurrency, tuple(values), med, mad, med - MAD_SCALE * mad, rejected)


def cost(knobs: dict | None, baseline: bool) -> tuple:
    """Cheaper first: speculation off, then fewer drafted tokens (budget, else block size), a
    narrower tree (topk), a shorter draft window (none: the whole context, the dearest)."""
    if baseline:
        return (0,)
    k = knobs or {}
    num = lambda v, missing: v if isinstance(v, (int, float)) and not isinstance(v, bool) else missing  # noqa: E731
    return (1, num(k.get("budget"), num(k.get("block_size"), math.inf)), num(k.get("topk"), 1),
            num(k.get("window"), math.inf))


def per_repeat(runs: list[RunData]) -> dict[int, list[float]]:
    """concurrency -> one tok/s per run (the geometric mean of that run's cells at the concurrency)."""
    out: dict[int, list[float]] = {}
    for run in runs:
        at: dict[int, list[float]] = {}
        for cell in run.cells:
            tok = cell.get("output_tok_s")
            if isinstance(tok, (int, float)) and not isinstance(tok, bool):
                at.setdefault(int(cell["concurrency"]), []).append(float(tok))
        for conc, values in at.items():
            g = _geomean(values)
            if g is not None:
                out.setdefault(conc, []).append(g)
    return out


def bands(by_config: dict[str, list[RunData]], knobs: dict[str, dict],
          min_repeats: int = MIN_REPEATS) -> tuple[Band, ...]:
    """The winner per concurrency, merged into bands; () unless several concurrencies were measured."""
    scores: dict[int, list[Score]] = {}
    baseline = {config for config, runs in by_config.items() if any(r.baseline for r in runs)}
    for config, runs in by_config.items():
        for conc, values in per_repeat(runs).items():
            scores.setdefault(conc, []).append(score(config, conc, values, min_repeats))
    if len(scores) < 2:
        return ()
    winners: list[tuple[int, str | None, list[Score]]] = []
    for conc in sorted(scores):
        eligible = [s for s in scores[conc] if s.rejected is None]
        if not eligible:
            winners.append((conc, None, scores[conc]))
            continue
        top = max(s.score for s in eligible)
        tied = [s for s in eligible if s.score >= top * (1 - TIE)]
        best = min(tied, key=lambda s: (cost(knobs.get(s.config), s.config in baseline), -s.score))
        winners.append((conc, best.config, scores[conc]))
    out: list[Band] = []
    for conc, winner, at in winners:
        if winner is None:
            continue
        if out and out[-1].config == winner and out[-1].high == _previous(winners, conc):
            last = out[-1]
            out[-1] = Band(last.low, conc, winner, last.knobs, last.baseline, (*last.scores, *at))
        else:
            out.append(Band(conc, conc, winner, knobs.get(winner), winner in baseline, tuple(at)))
    return tuple(out)


def _previous(winners: list[tuple[int, str | None, list[Score]]], conc: int) -> int | None:
    concs = [c for c, _, _ in winners]
    i = concs.index(conc)
    return concs[i - 1] if i else None

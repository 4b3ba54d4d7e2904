"""The simulator's seeded performance model: step time and acceptance from the knobs.

Knobs (``Knobs``): algorithm (None, DFLASH, DDTREE), block size B (``--speculative-num-draft-tokens``),
draft window W (None = full context), DDTree budget N (drafted tree nodes verified per step; a DFLASH
chain verifies B-1 drafts) and topk K (``SGLANG_DDTREE_MAX_TOPK``). State: context length L of a
request (prompt + generated tokens) and concurrency n (running requests in the batch).

Acceptance (tau = expected tokens per verify step, bonus token included):
- top-1 per-position acceptance ``a0 = 0.80``; a window smaller than the context costs
  ``0.015 * log2(L / W)`` of it (at most 0.12): the draft no longer sees the far context; a window
  below the 2048 tokens the draft was trained with starves it: another ``0.08 * log2(2048 / W)``;
- topk K raises it to ``aK = 1 - (1 - a0) * K ** -0.45`` (DFLASH chain: K = 1);
- later positions are harder: position i is accepted (given the ones before) with
  ``aK * max(0.3, 1 - 0.05 * (i - 1))``;
- reachable depth: a chain reaches ``D = B - 1``; a tree of N nodes ``D = min(B - 1, N / (1 + 0.2 (K - 1)))``
  (the fractional last level counts pro rata); tau = 1 + sum of the chain probabilities up to D.
Each step samples the accepted run from this chain with the request's seeded RNG (``--sim-seed``),
so its mean is tau and a measurement's noise is reproducible per seed.

Step time (ms), V = verified tokens per request (N + 1 for a tree, B for a chain, 1 without speculation):
- target: ``7.0 + 0.13 * n * V`` (weights once, then compute per verified token) plus KV reads
  ``0.00005 * sum(L) * (1 + V / 32)``;
- draft: ``1.0 + 0.02 * n * B`` plus attention over ``min(L, W)`` (all of L without a window):
  ``0.00024 * n * Ld``; DDTree tree building ``0.15 * n * K``;
- prefill adds ``2 + 0.02 * new_tokens`` to the step that admits new requests.

Outcome (``python -m backends.sim.model`` prints the table): at the tuning point that matters for a
coding box (4k context, 8 concurrent streams) **b8-t4-w2048** is the best of {b4-t4-w2048,
b8-t4-w2048, b16-t4-w2048, b12-t6-w2048, b8-t4-nowindow} (about 1036 tok/s against 887, 902, 935
and 934): b16 pays its verify cost, b4 accepts too little, b12-t6 spends its budget on width, and
no-window loses more the longer the context (16k: 831 vs 502). At one stream b12-t6 leads narrowly;
at 32 streams and short context plain decoding wins (verify compute dominates).

The search space ``budget=4,8,16 topk=2,4,6 window=1024,2048,none`` (``SEARCH_SPACE``; ``ddtune
search``) has one known best at 4k/c8: **budget=8 topk=2 window=2048**, about 1089 tok/s, 3.6% ahead
of budget=4 topk=2 window=2048 and 5.1% ahead of b8-t4-w2048 (``python -m backends.sim.model
--space`` prints the ranking; ``space_ranking`` computes it).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

A0 = 0.80
DECAY = 0.05          # later draft positions are harder: each costs this much of the top-1 acceptance
FAR = 0.015           # acceptance lost per halving of the context a window hides
TRAINED_WINDOW = 2048  # the window the draft was trained with; a smaller one starves it
STARVED = 0.08        # acceptance lost per halving of the window below TRAINED_WINDOW
WIDTH = 0.2           # a tree of topk K spreads its budget over 1 + WIDTH (K - 1) branches per level


@dataclass(frozen=True)
class Knobs:
    algorithm: str | None = None      # None, "DFLASH", "DDTREE"
    block_size: int = 16
    budget: int | None = None         # DDTree budget; ignored for a DFLASH chain
    topk: int = 1
    window: int | None = None

    @property
    def proposed(self) -> int:
        """Draft tokens proposed (verified) per request per step."""
        if self.algorithm is None:
            return 0
        if self.algorithm == "DDTREE":
            return int(self.budget if self.budget is not None else self.block_size - 1)
        return self.block_size - 1

    @property
    def verify_tokens(self) -> int:
        return self.proposed + 1


@dataclass(frozen=True)
class Acceptance:
    alpha: float          # per-position acceptance probability
    depth: float          # reachable draft depth (may be fractional)
    tau: float            # expected tokens per verify step (bonus included)


def acceptance(knobs: Knobs, context: int) -> Acceptance:
    if knobs.algorithm is None:
        return Acceptance(0.0, 0.0, 1.0)
    a0 = A0
    if knobs.window is not None and context > knobs.window:
        a0 -= min(0.12, FAR * math.log2(context / knobs.window))
        if knobs.window < TRAINED_WINDOW:
            a0 -= STARVED * math.log2(TRAINED_WINDOW / knobs.window)
    k = max(1, knobs.topk) if knobs.algorithm == "DDTREE" else 1
    alpha = 1.0 - (1.0 - a0) * k ** -0.45
    if knobs.algorithm == "DDTREE":
        width = 1.0 + WIDTH * (k - 1)
        depth = min(knobs.block_size - 1.0, knobs.proposed / width)
    else:
        depth = float(knobs.block_size - 1)
    full = int(depth)
    expected, reach = 0.0, 1.0
    for i in range(1, full + 2):
        reach *= position_alpha(alpha, i)
        expected += reach if i <= full else (depth - full) * reach
    return Acceptance(alpha, depth, 1.0 + expected)


def _expected(alpha: float, depth: float) -> float:
    full = int(depth)
    expected, reach = 0.0, 1.0
    for i in range(1, full + 2):
        reach *= position_alpha(alpha, i)
        expected += reach if i <= full else (depth - full) * reach
    return 1.0 + expected


def forced_acceptance(knobs: Knobs, tau: float) -> Acceptance:
    """--sim-acceptance: the per-position alpha whose chain gives a mean of ``tau`` tokens per step
    (1.0: nothing accepted, a drafter that stopped helping), capped at what the depth allows."""
    depth = float(knobs.block_size - 1)
    if tau <= 1.0:
        return Acceptance(0.0, 0.0, 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _expected(mid, depth) < tau else (lo, mid)
    return Acceptance(lo, depth, _expected(lo, depth))


def position_alpha(alpha: float, i: int) -> float:
    """Acceptance of the i-th draft position given the previous ones were accepted (later is harder)."""
    return alpha * max(0.3, 1.0 - DECAY * (i - 1))


def sample_accept(rng: random.Random, acc: Acceptance) -> int:
    """Tokens produced by one verify step (>= 1): the bonus token plus the accepted draft chain."""
    if acc.depth <= 0:
        return 1
    n = 1
    full = int(acc.depth)
    for i in range(1, full + 1):
        if rng.random() >= position_alpha(acc.alpha, i):
            return n
        n += 1
    if rng.random() < (acc.depth - full) * position_alpha(acc.alpha, full + 1):
        n += 1
    return n


def step_ms(knobs: Knobs, n: int, contexts_sum: int) -> float:
    """Wall time of one decode (verify) step for a batch of n requests whose contexts sum to contexts_sum."""
    if n <= 0:
        return 0.0
    mean_ctx = contexts_sum / n
    v = knobs.verify_tokens if knobs.algorithm else 1
    t = 7.0 + 0.13 * n * v + 0.00005 * contexts_sum * (1.0 + v / 32.0)
    if knobs.algorithm:
        ld = min(mean_ctx, knobs.window) if knobs.window else mean_ctx
        t += 1.0 + 0.02 * n * knobs.block_size + 0.00024 * n * ld
        if knobs.algorithm == "DDTREE":
            t += 0.15 * n * knobs.topk
    return t


def prefill_ms(new_tokens: int) -> float:
    return 2.0 + 0.02 * new_tokens


def tokens_per_second(knobs: Knobs, context: int, n: int) -> float:
    """Steady-state output tok/s of the whole batch (n requests all at this context)."""
    acc = acceptance(knobs, context)
    return n * acc.tau / step_ms(knobs, n, n * context) * 1000.0


PRESETS = {
    "plain": Knobs(),
    "dflash-w2048": Knobs("DFLASH", 16, None, 1, 2048),
    "b4-t4-w2048": Knobs("DDTREE", 16, 4, 4, 2048),
    "b8-t4-w2048": Knobs("DDTREE", 16, 8, 4, 2048),
    "b16-t4-w2048": Knobs("DDTREE", 16, 16, 4, 2048),
    "b12-t6-w2048": Knobs("DDTREE", 16, 12, 6, 2048),
    "b8-t4-nowindow": Knobs("DDTREE", 16, 8, 4, None),
}


SEARCH_SPACE = {"budget": (4, 8, 16), "topk": (2, 4, 6), "window": (1024, 2048, None)}


def ddtree(budget: int, topk: int, window: int | None, block_size: int = 16) -> Knobs:
    """The knobs a DDTree server runs for ddtune's budget, topk and window."""
    return Knobs("DDTREE", block_size, budget, topk, window)


def space_ranking(context: int = 4096, concurrency: int = 8,
                  space: dict[str, tuple] | None = None) -> list[tuple[float, dict]]:
    """Every configuration of a budget x topk x window space with its steady-state tok/s, best first."""
    space = space or SEARCH_SPACE
    rows = [(tokens_per_second(ddtree(b, k, w), context, concurrency), {"budget": b, "topk": k, "window": w})
            for b in space["budget"] for k in space["topk"] for w in space["window"]]
    return sorted(rows, key=lambda row: row[0], reverse=True)


def table(contexts=(1024, 4096, 16384, 32768), concurrencies=(1, 8, 32)) -> str:
    cols = [(c, n) for n in concurrencies for c in contexts]
    head = f"{'preset':<16}" + "".join(f"{f'{c // 1024}k/c{n}':>10}" for c, n in cols) + "   tau@4k"
    lines = [head, "-" * len(head)]
    for name, k in PRESETS.items():
        row = "".join(f"{tokens_per_second(k, c, n):>10.0f}" for c, n in cols)
        lines.append(f"{name:<16}{row}   {acceptance(k, 4096).tau:6.2f}")
    lines.append("tok/s of the whole batch; columns are context/concurrency")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if "--space" in sys.argv:
        for speed, knobs in space_ranking():
            print(f"{speed:8.0f}  " + " ".join(f"{k}={'none' if v is None else v}" for k, v in knobs.items()))
    else:
        print(table())

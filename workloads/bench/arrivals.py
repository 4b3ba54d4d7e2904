"""When a rate cell's requests leave: a Poisson stream, or a gamma one with bursts. Pure.

``arrival_offsets(n, rate, burstiness, seed)`` gives the n send times in seconds from the cell's
start: the first at 0, then gaps drawn from a gamma distribution of shape ``burstiness`` and mean
``1 / rate`` (sglang.bench_serving's ``--burstiness``: 1.0 is a Poisson process, exponential gaps;
below 1 burstier, above 1 more even). The same seed gives the same times, so a run can be repeated
and its arrivals checked against what was sent (``scheduled_s`` in responses.jsonl).
"""

from __future__ import annotations

import random


def arrival_offsets(n: int, rate: float, burstiness: float = 1.0, seed: int | str = 0) -> list[float]:
    if rate <= 0 or burstiness <= 0:
        raise ValueError("rate and burstiness must be above 0")
    rng = random.Random(seed)
    scale = 1.0 / (rate * burstiness)
    out, t = [], 0.0
    for _ in range(n):
        out.append(t)
        t += rng.gammavariate(burstiness, scale)
    return out


def cell_seed(seed: int, key) -> str:
    """The seed of one cell's arrivals: the plan's, and the cell (so cells differ, and repeat)."""
    return f"{seed}:{key.prompts}:{key.context}:{key.concurrency}:{key.rate}"

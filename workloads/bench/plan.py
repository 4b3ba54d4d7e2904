"""What a bench measures: the plan (run.json's ``plan``) and the key of each of its cells.

The matrix is prompts x context x concurrency, and x request rate when rates are asked for
(``CellKey``). ``contexts`` of 0 send each prompt as its source wrote it; a positive context brings
every prompt to that many tokens with real text (workloads/prompts/context.py). ``release`` says how
a closed-loop cell's requests leave (``wave`` or ``staggered``, workloads/bench/matrix.py); a cell
with a ``request_rate`` sends a Poisson stream instead (``burstiness`` as sglang.bench_serving's
gamma), ``concurrency`` capping what is in flight. Requests stop where the model stops unless
``ignore_eos``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from backends.core import bounded
from workloads.runs.cellkey import CellKey
from workloads.runs.checks import MAX_SECONDS, plausible

__all__ = ["RELEASES", "RATES", "MULTI_TURN", "BenchPlan", "CellKey"]

RELEASES = ("wave", "staggered")
MULTI_TURN = ("live", "first")  # follow-up turns: after the model's live reply, or not sent


@dataclass(frozen=True)
class BenchPlan:
    contexts: tuple[int, ...]
    concurrencies: tuple[int, ...]
    max_tokens: int = 512
    coding: bool = False                     # the built-in coding problems, graded (``prompts`` ("coding",))
    requests_per_cell: int | None = None
    warmup: int = 1
    release: str = "wave"                    # "wave" or "staggered" (closed-loop cells)
    prompts: tuple[str, ...] = ()            # the sources, as named; none given: coding if ``coding``, else story
    ignore_eos: bool = False
    request_rates: tuple[float, ...] = ()    # requests/s; (): closed loop
    burstiness: float = 1.0
    seed: int = 0                            # the arrival times' seed
    slo: dict[str, float] = field(default_factory=dict)  # ttft_ms, tpot_ms: goodput counts requests within both
    multi_turn: str = "live"
    include_degenerate: bool = False         # degenerate answers count in acceptance (default: left out)

    def __post_init__(self) -> None:
        if not self.prompts:  # named once, so a plan read back equals the one written
            object.__setattr__(self, "prompts", ("coding",) if self.coding else ("story",))
        if self.release not in RELEASES:
            raise ValueError(f"release must be one of {', '.join(RELEASES)}, got {self.release!r}")
        if self.multi_turn not in MULTI_TURN:
            raise ValueError(f"multi_turn must be one of {', '.join(MULTI_TURN)}, got {self.multi_turn!r}")
        if any(r <= 0 for r in self.request_rates) or self.burstiness <= 0:
            raise ValueError("request rates and burstiness must be above 0")
        if any(c < 0 for c in self.contexts):
            raise ValueError("contexts must be 0 (as is) or more")

    @property
    def sources(self) -> tuple[str, ...]:
        return self.prompts

    def cells(self) -> list[CellKey]:
        rates: tuple[float | None, ...] = self.request_rates or (None,)
        return [CellKey(ctx, conc, source, rate) for source in self.sources for ctx in self.contexts
                for conc in self.concurrencies for rate in rates]

    def requests_for(self, concurrency: int) -> int:
        return self.requests_per_cell or max(2 * concurrency, 8)

    def to_json(self) -> dict:
        data = asdict(self)
        data["prompts"] = list(self.prompts)
        return data

    @classmethod
    def from_json(cls, data: dict) -> BenchPlan:
        # a plan written before waves existed was run staggered; one written before prompt sources sent
        # the plain task with ignore_eos (its coding prompts without): its resume keeps both
        # every number is checked (workloads/runs/checks.py): a resume never trusts an edited plan
        legacy = "prompts" not in data
        coding = bool(data["coding"])
        requests = data.get("requests_per_cell")
        return cls(tuple(plausible(c, "context", low=0) for c in data["contexts"]) or _none("contexts"),
                   tuple(plausible(c, "concurrency") for c in data["concurrencies"]) or _none("concurrencies"),
                   plausible(data["max_tokens"], "max_tokens"), coding,
                   None if requests is None else plausible(requests, "requests", "requests_per_cell"),
                   plausible(data.get("warmup", 1), "requests", "warmup", low=0), str(data.get("release", "staggered")),
                   tuple(str(p) for p in data.get("prompts") or ()),
                   bool(data.get("ignore_eos", legacy and not coding)),
                   tuple(_rate(r) for r in data.get("request_rates") or ()), _rate(data.get("burstiness", 1.0)),
                   plausible(data.get("seed", 0), "seed", low=0),
                   {str(k): bounded(v, 0, MAX_SECONDS * 1000, f"slo {k}") for k, v in (data.get("slo") or {}).items()},
                   str(data.get("multi_turn", "live")), bool(data.get("include_degenerate", False)))


RATES = (1e-9, 1e9)  # a request rate or burstiness a plan may hold (requests/s; the gamma's shape)


def _rate(value) -> float:
    return bounded(value, *RATES, "request rate")


def _none(what: str) -> tuple[int, ...]:
    raise ValueError(f"{what}: none")

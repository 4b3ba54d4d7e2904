"""The key of a bench cell: prompts x context x concurrency (x request rate). Pure.

Every reader of cells.jsonl (the bench's resume, reports, the console's run comparison) keys a cell
the same way; a cell written before prompt sources and rates has its run's first source (the plan's)
and no rate.
"""

from __future__ import annotations

from typing import NamedTuple


class CellKey(NamedTuple):
    """One cell. Indexes 0 and 1 are context and concurrency, as the older (context, concurrency) keys."""

    context: int
    concurrency: int
    prompts: str = ""
    rate: float | None = None   # requests/s; None: closed loop

    @classmethod
    def of(cls, cell: dict, default_prompts: str = "") -> CellKey:
        """The key of a cells.jsonl record (one written before prompts and rates: the plan's source, closed loop)."""
        rate = cell.get("request_rate")
        return cls(int(cell["context"]), int(cell["concurrency"]), str(cell.get("prompts") or default_prompts),
                   float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None)

    def label(self) -> str:
        ctx = "as is" if self.context == 0 else f"ctx {self.context}"
        rate = f" rate {self.rate:g}/s" if self.rate is not None else ""
        return f"{self.prompts} {ctx} c{self.concurrency}{rate}".strip()

    def sort_key(self) -> tuple:
        return (self.prompts, self.context, self.concurrency, self.rate or 0.0)


def plan_prompts(plan: dict | None) -> str:
    """The first prompt source a run's plan names (an older plan: coding when it graded, else story)."""
    plan = plan or {}
    prompts = plan.get("prompts")
    if isinstance(prompts, list) and prompts and isinstance(prompts[0], str):
        return prompts[0]
    return "coding" if plan.get("coding") else "story"

"""The papers' acceptance beside a user's: the published figures (presets/papers.toml) and whether a
cell is comparable with the matching one. Pure over the data.

A cell is ``comparable: yes`` only when model, drafter (DFlash or DDTree), block size (16), temperature
(0: ddtune's), template and natural stops all match the published row; ``partly`` when the model and
drafter match but something else differs (the papers wrap GSM8K, MATH-500 and HumanEval prompts in
their own templates and run at batch 1 on the prompt alone, ddtune sends the prompt as the source
wrote it, at the cell's concurrency and context); ``no`` when the model or the drafter is not one the
papers measured, or the cell forced tokens past the model's stop (``ignore_eos``). Each verdict says
why, one reason per mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from backends.core import read_toml
from backends.core import presets_dir

# the datasets whose papers' template differs from a prompt sent as it is (MT-Bench: both turns, the
# live reply fed back, as ddtune's live multi-turn does; the others were sent as written)
TEMPLATED = {"GSM8K", "MATH-500", "HumanEval"}


@dataclass(frozen=True)
class PaperFigure:
    dataset: str
    model: str
    drafter: str          # DFLASH or DDTREE
    tau: float
    temperature: float
    block_size: int
    template: str
    ignore_eos: bool
    batch: int
    source: str


@dataclass(frozen=True)
class Verdict:
    comparable: str                 # yes, partly, no
    reasons: tuple[str, ...]
    figure: PaperFigure | None      # the published row it sits beside (None: the model was not measured)

    def to_json(self) -> dict:
        f = self.figure
        return {"comparable": self.comparable, "reasons": list(self.reasons),
                "paper": None if f is None else {"tau": f.tau, "model": f.model, "drafter": f.drafter,
                                                 "dataset": f.dataset, "source": f.source}}


def _figures(path: Path) -> tuple[PaperFigure, ...]:
    out = []
    for src in read_toml(path).get("source", []):
        for dataset, *per_model in src["rows"]:
            for model, taus in zip(src["models"], per_model, strict=True):
                for drafter, tau in zip(src["drafters"], taus, strict=True):
                    out.append(PaperFigure(str(dataset), str(model), str(drafter), float(tau),
                                           float(src["temperature"]), int(src["block_size"]), str(src["template"]),
                                           bool(src["ignore_eos"]), int(src["batch"]), str(src["name"])))
    return tuple(out)


@cache
def papers() -> tuple[PaperFigure, ...]:
    return _figures(presets_dir() / "papers.toml")


def _matches(model_path: str | None, model: str) -> bool:
    if not model_path:
        return False
    name = model.lower().replace(" moe", "").replace(" ", "-")
    return name in model_path.lower().replace("_", "-")


def verdict(dataset: str | None, *, model: str | None, algorithm: str | None, block_size: int | None,
            ignore_eos: bool, concurrency: int, context: int, multi_turn: list[str] | tuple[str, ...] = (),
            figures: tuple[PaperFigure, ...] | None = None) -> Verdict | None:
    """The verdict for one cell of ``dataset`` (None: a dataset the papers did not measure)."""
    rows = [f for f in (figures if figures is not None else papers()) if f.dataset == dataset]
    if not rows:
        return None
    drafter = (algorithm or "").upper()
    mine = [f for f in rows if _matches(model, f.model)]
    same = [f for f in mine if f.drafter == drafter and f.temperature == 0.0]
    figure = same[0] if same else None
    if figure is None:
        measured = ", ".join(sorted({f.model for f in rows}))
        why = (f"model {model or 'unknown'}: the papers measured {measured}" if not mine else
               f"drafter {algorithm or 'none'}: the papers measured {', '.join(sorted({f.drafter for f in mine}))}")
        return Verdict("no", (why,), None)
    reasons = []
    if ignore_eos:
        reasons.append("ignore_eos: tokens past the model's stop count (the papers stop at EOS)")
    if block_size is not None and block_size != figure.block_size:
        reasons.append(f"block size {block_size} (the papers: {figure.block_size})")
    elif block_size is None:
        reasons.append("block size not known")
    if dataset in TEMPLATED:
        reasons.append(f"template: prompts sent as written (the papers wrap {dataset} in their own)")
    elif dataset == "MT-Bench" and "live reply" not in multi_turn:
        reasons.append("template: the papers send both turns with the live reply fed back")
    if concurrency > figure.batch:
        reasons.append(f"concurrency {concurrency} (the papers: batch {figure.batch}; acceptance is nearly flat in it)")
    if context > 0:
        reasons.append(f"context {context}: real text added before the prompt (the papers: the prompt alone)")
    if ignore_eos:
        return Verdict("no", tuple(reasons), figure)
    return Verdict("partly" if reasons else "yes", tuple(reasons), figure)

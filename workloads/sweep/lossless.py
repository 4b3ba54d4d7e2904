"""The lossless check inside a sweep that has a speculation-off baseline configuration.

Right after a slot's server is applied (before its bench): the first baseline slot records the greedy
outputs of a few fixed prompts into the sweep folder (``lossless-baseline.json``, the same file
``ddtune check-lossless --save-baseline`` writes); every later slot, speculative or a baseline
repeat, records them again and compares token by token. A slot that runs before the baseline was
recorded (only a plan that orders a speculative configuration first) is not checked: its record says
``no baseline yet``. The check never fails a slot: a divergence is a finding, and a check that
cannot run records why.

The slot's record gets ``lossless``, one of:

    {"status": "recorded", "baseline": FILE, "prompts": n, "max_tokens": t, "unit": u}
    {"status": "compared", "prompts": n, "diverged": k, "rate": k/n, "first": [pos|null per prompt],
     "max_tokens": t, "unit": u}
    {"status": "no baseline yet"}
    {"status": "error", "error": "why"}
"""

from __future__ import annotations

from pathlib import Path

from backends.core import DdtuneError
from workloads.grading.lossless import (baseline_doc, baseline_prompts, check_matches, compare_outputs,
                                        read_baseline, record_outputs, write_baseline)
from workloads.grading.problems import load_problems
from workloads.sweep.plan import SweepConfig

FILE = "lossless-baseline.json"
PROMPTS = 8
MAX_TOKENS = 128


async def check_slot(folder: Path, config: SweepConfig, url: str, api_key: str | None) -> dict:
    """Record (first baseline) or compare (every other slot) on the server at ``url``; never raises a
    DdtuneError or OSError: a check that cannot run answers ``{"status": "error", ...}``."""
    path = folder / FILE
    try:
        if not path.is_file():
            if not config.baseline:
                return {"status": "no baseline yet"}
            problems = load_problems()
            items = baseline_prompts(problems, min(PROMPTS, len(problems)))
            ident, outputs, unit = await record_outputs(url, api_key, items, MAX_TOKENS)
            write_baseline(str(path), baseline_doc(ident, outputs, unit, MAX_TOKENS, url))
            return {"status": "recorded", "baseline": FILE, "prompts": len(outputs), "max_tokens": MAX_TOKENS,
                    "unit": unit}
        baseline = read_baseline(str(path))
        items = [(o.id, o.prompt) for o in baseline.outputs]
        ident, outputs, unit = await record_outputs(
            url, api_key, items, baseline.max_tokens,
            admit=lambda ident: check_matches(baseline, ident["model"], items))
        found = compare_outputs(baseline, outputs, unit)
    except (DdtuneError, OSError) as exc:
        return {"status": "error", "error": str(getattr(exc, "message", exc))}
    return {"status": "compared", "prompts": found["prompts"], "diverged": found["diverged"],
            "rate": found["divergence_rate"], "first": [r["first_difference"] for r in found["results"]],
            "max_tokens": found["max_tokens"], "unit": found["unit"]}


def describe_lossless(result: dict) -> str:
    """One line for the sweep's log; a divergence in capitals."""
    status = result.get("status")
    if status == "recorded":
        return f"lossless baseline recorded: {result['prompts']} prompts, {result['max_tokens']} tokens"
    if status == "compared":
        n, k = result["prompts"], result["diverged"]
        if not k:
            return f"lossless: 0/{n} prompts diverged from the baseline"
        at = ", ".join(str(p) for p in result["first"] if p is not None)
        return f"LOSSLESS CHECK: {k}/{n} prompts DIVERGED from the baseline (first differing token at {at})"
    if status == "error":
        return f"lossless check could not run: {result.get('error')}"
    return f"lossless: {status}"

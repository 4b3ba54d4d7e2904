"""``ddtune check-lossless`` as one call: ``check_lossless(LosslessSpec(...), on_event) -> LosslessOutcome``.

Either records a baseline (``save_baseline``: the server must not speculate) or checks a
speculative server against one (``baseline``); every mismatch between the spec, the baseline and
the server is a UsageError naming the fix, raised before the first prompt is sent. The steps are
workloads/grading/lossless.py's; the command line only parses into the spec and prints the outcome.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass

from backends.core import UsageError
from backends.core import check_output
from workloads.grading.lossless import (Baseline, baseline_doc, baseline_prompts, check_matches, compare_outputs,
                                        read_baseline, record_outputs, write_baseline)
from workloads.grading.problems import load_problems

DEFAULT_PROMPTS = 16
DEFAULT_MAX_TOKENS = 256


@dataclass(frozen=True)
class LosslessSpec:
    url: str
    api_key: str | None = None
    prompts: int | None = None        # None: the baseline's, else DEFAULT_PROMPTS
    max_tokens: int | None = None     # None: the baseline's, else DEFAULT_MAX_TOKENS
    baseline: str | None = None       # check against this file
    save_baseline: str | None = None  # record this (non-speculative) server's outputs here


@dataclass(frozen=True)
class PromptAnswered:
    done: int
    total: int


@dataclass(frozen=True)
class PromptCompared:
    id: str
    diverged: bool
    first_difference: int | None      # the first position that differs (None: the same)
    baseline_tokens: int
    tokens: int
    baseline_from: tuple              # what each side has from the first difference on (a few tokens)
    now_from: tuple                   # ("from" in the JSON)


@dataclass(frozen=True)
class LosslessReport:
    """A check's report: what ``--json`` prints (``to_json``, the same keys as ever)."""

    unit: str
    prompts: int
    diverged: int
    divergence_rate: float
    max_tokens: int
    baseline: str                     # the baseline file
    model: str
    results: tuple[PromptCompared, ...]
    server: dict                      # url, speculative, algorithm, version

    @classmethod
    def of(cls, doc: dict, server: dict) -> LosslessReport:
        results = tuple(PromptCompared(r["id"], r["diverged"], r["first_difference"], r["baseline_tokens"],
                                       r["tokens"], tuple(r["baseline_from"]), tuple(r["from"]))
                        for r in doc["results"])
        return cls(doc["unit"], doc["prompts"], doc["diverged"], doc["divergence_rate"], doc["max_tokens"],
                   doc["baseline"], doc["model"], results, server)

    def to_json(self) -> dict:
        return {"unit": self.unit, "prompts": self.prompts, "diverged": self.diverged,
                "divergence_rate": self.divergence_rate, "max_tokens": self.max_tokens, "baseline": self.baseline,
                "model": self.model,
                "results": [{"id": r.id, "diverged": r.diverged, "first_difference": r.first_difference,
                             "baseline_tokens": r.baseline_tokens, "tokens": r.tokens,
                             "baseline_from": list(r.baseline_from), "from": list(r.now_from)} for r in self.results],
                "server": self.server}

    def text(self) -> str:
        """The report for people: one line per prompt (same, or where it diverges) and the count."""
        server = self.server
        spec = server.get("algorithm") or ("no speculation" if server.get("speculative") is False else "speculation ?")
        lines = [f"lossless check: {self.prompts} prompts x {self.max_tokens} max tokens, {spec} at "
                 f"{server['url']} vs baseline {self.baseline} ({self.model}); compared {unit_text(self.unit)}"]
        width = max(len(r.id) for r in self.results)
        for r in self.results:
            if r.diverged:
                what = (f"DIVERGES at position {r.first_difference} "
                        f"(baseline {r.baseline_tokens}, now {r.tokens} tokens)")
            else:
                what = f"same ({r.tokens} tokens)"
            lines.append(f"  {r.id:<{width}}  {what}")
        lines.append(f"diverged: {self.diverged}/{self.prompts} prompts ({self.divergence_rate:.0%})"
                     + ("" if self.diverged else ": lossless on these prompts"))
        return "\n".join(lines)


def unit_text(unit: str) -> str:
    return "by token id" if unit == "token_ids" else "by whitespace-split word: the server returned no output_ids"


@dataclass(frozen=True)
class LosslessOutcome:
    """A recorded baseline (``saved``) or a check's report (``report``: what ``--json`` prints)."""

    prompts: int
    max_tokens: int
    unit: str                         # "token_ids" or "words"
    model: str
    saved: str | None = None          # the baseline file written
    unsure_spec: bool = False         # a recorded baseline from a server whose /server_info was unreadable
    report: LosslessReport | None = None  # the check's report, with the server's identity

    @property
    def diverged(self) -> int:
        return self.report.diverged if self.report else 0

    def to_json(self) -> dict:
        if self.report is not None:
            return self.report.to_json()
        return {"saved_baseline": self.saved, "prompts": self.prompts, "max_tokens": self.max_tokens,
                "unit": self.unit, "model": self.model}

    def text(self) -> str:
        """What ``ddtune check-lossless`` prints without --json: the saved baseline, or the report."""
        if self.report is not None:
            return self.report.text()
        return (f"baseline of {self.prompts} prompts x {self.max_tokens} max tokens ({unit_text(self.unit)}) "
                f"from {self.model} saved to {self.saved}")


def _baseline(spec: LosslessSpec) -> tuple[Baseline | None, int, int]:
    """The baseline (cut to the prompts asked), the number of prompts and max tokens; UsageError
    for a spec that does not fit it."""
    if spec.baseline and spec.save_baseline:
        raise UsageError("--baseline checks against a baseline, --save-baseline records one: give one of them",
                         hint="record with speculation off (--save-baseline), then check each config (--baseline)")
    if not spec.baseline and not spec.save_baseline:
        return None, spec.prompts or DEFAULT_PROMPTS, spec.max_tokens or DEFAULT_MAX_TOKENS
    if spec.save_baseline:
        if not os.path.isdir(os.path.dirname(os.path.abspath(spec.save_baseline))):
            raise UsageError(f"--save-baseline {spec.save_baseline}: its directory does not exist",
                             hint="create the directory or pick another path")
        check_output(spec.save_baseline)  # a link or another user's folder: refused before the server is asked
        return None, spec.prompts or DEFAULT_PROMPTS, spec.max_tokens or DEFAULT_MAX_TOKENS
    assert spec.baseline is not None
    baseline = read_baseline(spec.baseline)
    if spec.max_tokens is not None and spec.max_tokens != baseline.max_tokens:
        raise UsageError(f"--max-tokens {spec.max_tokens}: the baseline was recorded with {baseline.max_tokens}",
                         hint="leave --max-tokens out to use the baseline's, or record a new baseline")
    n = spec.prompts or len(baseline.outputs)
    if n > len(baseline.outputs):
        raise UsageError(f"--prompts {n}: only {len(baseline.outputs)} in the baseline {baseline.path}",
                         hint="use fewer prompts, or record a baseline with more (--save-baseline FILE --prompts N)")
    if n < len(baseline.outputs):  # the first N of the baseline's prompts
        baseline = dataclasses.replace(baseline, outputs=baseline.outputs[:n])
    return baseline, n, baseline.max_tokens


def check_lossless(spec: LosslessSpec, on_event: Callable[[PromptAnswered], object] | None = None) -> LosslessOutcome:
    """Record or check (blocking), as the spec says."""
    baseline, n, max_tokens = _baseline(spec)
    items = baseline_prompts(load_problems(), n)

    def admit(ident: dict) -> None:
        """Stop before sending anything when the server and the request do not fit together."""
        if baseline is not None:
            check_matches(baseline, ident["model"], items)
            return
        if ident["speculative"]:
            raise UsageError(f"the server runs speculative decoding ({ident['algorithm']}): a check compares it "
                             "with a baseline recorded with speculation off",
                             hint="pass --baseline FILE; record FILE first with '--save-baseline FILE' against "
                                  "the server with speculation off (docs/lossless.md)")
        if not spec.save_baseline:
            what = ("the server runs without speculation" if ident["speculative"] is False
                    else "the server's /server_info cannot be read, so whether it speculates is unknown")
            raise UsageError(f"nothing to compare: {what} and no --baseline was given",
                             hint="record this server's outputs as the baseline with --save-baseline FILE, "
                                  "or check a speculative server with --baseline FILE")

    def progress(done: int, total: int) -> None:
        if on_event is not None:
            on_event(PromptAnswered(done, total))

    ident, outputs, unit = asyncio.run(record_outputs(spec.url, spec.api_key, items, max_tokens, admit, progress))
    if baseline is None:
        assert spec.save_baseline is not None
        write_baseline(spec.save_baseline, baseline_doc(ident, outputs, unit, max_tokens, spec.url))
        return LosslessOutcome(len(outputs), max_tokens, unit, ident["model"], saved=spec.save_baseline,
                               unsure_spec=ident["speculative"] is None)
    report = LosslessReport.of(compare_outputs(baseline, outputs, unit),
                               {"url": spec.url, "speculative": ident["speculative"], "algorithm": ident["algorithm"],
                                "version": ident["version"]})
    return LosslessOutcome(report.prompts, max_tokens, report.unit, baseline.model, report=report)

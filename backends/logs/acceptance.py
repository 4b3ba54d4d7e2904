"""Acceptance (accepted tokens per verify step, bonus included) from each place a server tells it. Pure.

SGLang 0.5.11-0.5.18 put no spec field on chat answers (``return_spec_tokens_details`` is 0.5.19+;
recorded on a real 0.5.17), so a figure carries where it came from, in this order of preference:

- ``request``: the requests' own ``spec_verify_ct`` (``/generate``'s ``meta_info``, chat's
  ``sglext.spec_tokens_details`` from 0.5.19): their tokens / their verify steps;
- ``counters``: the server's Prometheus counters (``--enable-metrics``) at the window's edges:
  Δ ``sglang:generation_tokens_total`` / Δ ``sglang:spec_verify_calls_total`` (each summed over its
  label sets; every request the server ran in the window counts, not only ours);
- ``log``: the ``Decode batch`` lines' ``accept len`` (a per-interval figure) in the window, weighted
  by the verify calls each line stands for: ``#running-req`` (decode steps per line are the fixed
  ``--decode-log-interval``, each one verify call per running request). The weight makes it the
  server's own definition, total tokens / total verify calls, where the batch held steady.

A server that does not run speculative decoding has no acceptance at all (None), whatever it sends.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

SOURCES = ("request", "counters", "log")
TOKENS = "generation_tokens_total"
VERIFY = "spec_verify_calls_total"
_SAMPLE = re.compile(r"^sglang:(generation_tokens_total|spec_verify_calls_total)(?:\{[^}]*\})?\s+(\S+)", re.M)


@dataclass(frozen=True)
class Acceptance:
    """One acceptance figure and where it came from (``SOURCES``)."""

    value: float
    source: str

    def to_json(self) -> dict:
        return {"value": round(self.value, 4), "source": self.source}


@dataclass(frozen=True)
class SpecCounters:
    """The two counters at one moment: generated tokens and verify calls, over all label sets."""

    tokens: float
    verify_calls: float


def parse_counters(text: str) -> SpecCounters | None:
    """The counters in a ``/metrics`` text; None when it has no ``spec_verify_calls_total``. A
    sample that is not a finite count (NaN, +Inf, negative: a server's text is untrusted) is skipped."""
    sums = {TOKENS: 0.0, VERIFY: 0.0}
    seen = set()
    for m in _SAMPLE.finditer(text):
        try:
            value = float(m[2])
        except ValueError:
            continue
        if not 0 <= value < math.inf:
            continue
        sums[m[1]] += value
        seen.add(m[1])
    if VERIFY not in seen or TOKENS not in seen or not all(map(math.isfinite, sums.values())):
        return None
    return SpecCounters(sums[TOKENS], sums[VERIFY])


def counter_acceptance(before: SpecCounters | None, after: SpecCounters | None) -> float | None:
    """Δtokens / Δverify calls between two readings; None without both, or with no verify call
    between them (an idle window, or a server that does not speculate), or after a counter reset."""
    if before is None or after is None:
        return None
    tokens, verify = after.tokens - before.tokens, after.verify_calls - before.verify_calls
    if verify <= 0 or tokens < 0:
        return None
    return tokens / verify


def log_acceptance(lines: Iterable[tuple[float, float | None, int]], lo: float, hi: float) -> float | None:
    """``accept len`` of the ``Decode batch`` lines logged in ``(lo, hi]``, each ``(t, accept_len,
    running_req)``, weighted by ``running_req`` (the verify calls it stands for, module docstring);
    None when no line in the window has both."""
    weighted = weight = 0.0
    for t, accept_len, running in lines:
        if lo < t <= hi and accept_len is not None and running > 0:
            weighted += accept_len * running
            weight += running
    return weighted / weight if weight else None


def pick(request: float | None, counters: float | None = None, log: float | None = None,
         speculative: bool | None = None) -> Acceptance | None:
    """The first figure there is, by the preference above; None on a server known not to speculate."""
    if speculative is False:
        return None
    for value, source in ((request, "request"), (counters, "counters"), (log, "log")):
        if value is not None:
            return Acceptance(value, source)
    return None

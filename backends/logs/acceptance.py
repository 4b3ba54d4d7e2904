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

llama.cpp's ``llama-server`` says it the same two ways in its own words: per request, the answer's
``timings`` (``predicted_n``, ``draft_n_accepted``: tokens / (tokens - accepted), each target step
yielding its accepted draft tokens plus one), and its ``/metrics`` (``--metrics``) as
``llamacpp:tokens_predicted_total`` and ``llamacpp:spec_decode_num_accepted_tokens_total`` read the
same way, with ``spec_decode_num_draft_tokens_total``, ``..._drafts_total`` and the per-position
``..._accepted_tokens_per_pos_total{position="k"}`` (which draft positions survive: ``draft_positions``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

SOURCES = ("request", "counters", "log")
TOKENS = "generation_tokens_total"
VERIFY = "spec_verify_calls_total"
# One sample a line: the labels and the gap before the value never cross a line break, so a text of
# many unclosed ``{`` costs one pass, not one pass per line (8 MiB of them held the event loop ~35 min).
_SAMPLE = re.compile(r"^sglang:(generation_tokens_total|spec_verify_calls_total)(?:\{[^}\n]*\})?[ \t]+(\S+)", re.M)
_LLAMA = re.compile(r"^llamacpp:(tokens_predicted_total|spec_decode_num_accepted_tokens_total|"
                    r"spec_decode_num_draft_tokens_total|spec_decode_num_drafts_total)[ \t]+(\S+)", re.M)
_POSITION = re.compile(r'^llamacpp:spec_decode_num_accepted_tokens_per_pos_total\{position="(\d{1,4})"\}[ \t]+(\S+)',
                       re.M)
POSITIONS = 1024  # draft positions counted: a draft is never longer (the deepest tree verifies ~1024 tokens)


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
    """The counters in a ``/metrics`` text (SGLang's, or llama.cpp's read as tokens and target steps);
    None when it has no verify-call counter (no speculative decoding counted there). A sample that is
    not a finite count (NaN, +Inf, negative: a server's text is untrusted) is skipped."""
    if "llamacpp:" in text:
        return _llama_counters(text)
    sums = {TOKENS: 0.0, VERIFY: 0.0}
    seen = set()
    for m in _SAMPLE.finditer(text):
        if (value := _sample(m[2])) is None:
            continue
        sums[m[1]] += value
        seen.add(m[1])
    if VERIFY not in seen or TOKENS not in seen or not all(map(math.isfinite, sums.values())):
        return None
    return SpecCounters(sums[TOKENS], sums[VERIFY])


def _sample(text: str) -> float | None:
    """A sample's value as a count: None for one that is no number, NaN, +Inf or negative (a server's
    text is untrusted), so every counter reader skips it alike."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < math.inf else None


def _llama_samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in _LLAMA.finditer(text):
        if (value := _sample(m[2])) is not None:
            out[m[1]] = value
    return out


def _llama_counters(text: str) -> SpecCounters | None:
    got = _llama_samples(text)
    tokens, accepted = got.get("tokens_predicted_total"), got.get("spec_decode_num_accepted_tokens_total")
    if tokens is None or accepted is None or accepted > tokens:
        return None
    return SpecCounters(tokens, tokens - accepted)


@dataclass(frozen=True)
class DraftCounters:
    """llama.cpp's draft counters at one moment: drafted and accepted tokens, drafts, and the accepted
    tokens per draft position (position 0 first: how far into a draft the target still agrees)."""

    drafted: float
    accepted: float
    drafts: float
    per_position: tuple[float, ...]

    @property
    def rate(self) -> float | None:
        """Accepted / drafted tokens (llama.cpp's "draft acceptance")."""
        return self.accepted / self.drafted if self.drafted > 0 else None

    @property
    def mean_len(self) -> float | None:
        """1 + accepted per draft (llama.cpp's "mean len")."""
        return 1.0 + self.accepted / self.drafts if self.drafts > 0 else None

    def survival(self) -> tuple[float, ...]:
        """Per position, the share of drafts whose token there was accepted."""
        return tuple(n / self.drafts for n in self.per_position) if self.drafts > 0 else ()

    def minus(self, before: DraftCounters | None) -> DraftCounters:
        if before is None:
            return self
        pos = tuple(a - (before.per_position[i] if i < len(before.per_position) else 0.0)
                    for i, a in enumerate(self.per_position))
        return DraftCounters(self.drafted - before.drafted, self.accepted - before.accepted,
                             self.drafts - before.drafts, pos)

    def to_json(self) -> dict:
        return {"drafted": self.drafted, "accepted": self.accepted, "drafts": self.drafts,
                "rate": None if self.rate is None else round(self.rate, 4),
                "mean_len": None if self.mean_len is None else round(self.mean_len, 4),
                "accepted_per_position": list(self.per_position)}


def draft_counters(text: str) -> DraftCounters | None:
    """llama.cpp's ``llamacpp:spec_decode_*`` counters in a ``/metrics`` text; None without them."""
    got = _llama_samples(text)
    if "spec_decode_num_drafts_total" not in got:
        return None
    positions: dict[int, float] = {}
    for m in _POSITION.finditer(text):
        value = _sample(m[2])
        if value is not None and int(m[1]) < POSITIONS:  # a server's text is untrusted: no 10**11-long tuple
            positions[int(m[1])] = value
    per = tuple(positions.get(i, 0.0) for i in range(max(positions) + 1)) if positions else ()
    return DraftCounters(got.get("spec_decode_num_draft_tokens_total", 0.0),
                         got.get("spec_decode_num_accepted_tokens_total", 0.0),
                         got["spec_decode_num_drafts_total"], per)


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

"""Prompts of an exact size in tokens, as the server counts them.

ddtune has no tokenizer: it asks the server. A prompt is a base text (a coding problem or a plain
instruction) preceded by filler words. ``PromptSizer`` measures the base once (``prompt_tokens``
of a 1-token request), learns how many tokens a filler word costs, and then searches the filler
length that lands exactly on the target, verifying with the server. Each request also gets a
fixed-width nonce first, so the server's prefix cache cannot serve one request from another.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

_WORDS = ("time year people way day man thing woman life child world school state family student group "
          "country problem hand part place case week company system program question work government number "
          "night point home water room mother area money story fact month lot right study book eye job word "
          "business issue side kind head house service friend father power hour game line end member law car "
          "city community name president team minute idea kid body information back parent face others level "
          "office door health person art war history party result change morning reason research girl guy moment "
          "air teacher force education").split()

PLAIN_TASK = "Write a long, detailed story about a lighthouse keeper. Keep writing until you are told to stop."
FILLER_HEADER = "Background notes (not needed for the task):"


def filler(units: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(units))


def nonce_text(nonce: int) -> str:
    return f"[request {nonce % 10**6:06d}]"


def render(base: str, units: int, nonce: int = 0, fine: int = 0) -> str:
    """The user message: nonce, then filler (words, then ``fine`` short " a" pieces), then the task."""
    if units <= 0 and fine <= 0:
        return f"{nonce_text(nonce)} {base}"
    return f"{nonce_text(nonce)} {FILLER_HEADER} {filler(units)}{' a' * fine}\n\n{base}"


@dataclass(frozen=True)
class SizedPrompt:
    base_id: str
    base: str
    units: int
    target_tokens: int
    measured_tokens: int  # what the server counted for the calibration request
    fine: int = 0

    def text(self, nonce: int) -> str:
        return render(self.base, self.units, nonce, self.fine)


Measure = Callable[[str], Awaitable[int]]


class PromptSizer:
    """Finds filler lengths that hit a token target. ``measure(text)`` returns the server's prompt_tokens."""

    def __init__(self, measure: Measure, max_probes: int = 6) -> None:
        self._measure = measure
        self._max_probes = max_probes
        self._base_tokens: dict[str, int] = {}
        self._per_unit: float | None = None
        self._cache: dict[tuple[str, int], SizedPrompt] = {}
        self.probes = 0

    async def _count(self, base: str, units: int, fine: int = 0) -> int:
        self.probes += 1
        return await self._measure(render(base, units, 0, fine))

    async def size(self, base_id: str, base: str, target: int) -> SizedPrompt:
        key = (base_id, target)
        if key in self._cache:
            return self._cache[key]
        if base_id not in self._base_tokens:
            self._base_tokens[base_id] = await self._count(base, 0)
        p0 = self._base_tokens[base_id]
        if target <= p0:
            sized = SizedPrompt(base_id, base, 0, target, p0)
            self._cache[key] = sized
            return sized
        if self._per_unit is None:
            probe_units = max(8, target - p0)
            measured = await self._count(base, probe_units)
            self._per_unit = max((measured - p0) / probe_units, 0.05)
        best_units, best_tokens = 0, p0
        units = max(1, round((target - p0) / self._per_unit))
        tried: dict[int, int] = {}
        for _ in range(self._max_probes):
            tokens = tried[units] if units in tried else await self._count(base, units)
            tried[units] = tokens
            if abs(tokens - target) < abs(best_tokens - target) or (
                    abs(tokens - target) == abs(best_tokens - target) and tokens <= target):
                best_units, best_tokens = units, tokens
            if tokens == target:
                break
            step = round((target - tokens) / self._per_unit) or (1 if tokens < target else -1)
            nxt = max(1, units + step)
            if nxt in tried:
                break
            units = nxt
        best_fine = 0
        if best_tokens != target:
            # A word can step over the target: fewer words plus a few short pieces land on it.
            start = best_units if best_tokens < target else best_units - 1
            for units in (start, start - 1):
                if units < 1 or best_tokens == target:
                    continue
                for fine in range(1, 5):
                    tokens = await self._count(base, units, fine)
                    if abs(tokens - target) < abs(best_tokens - target):
                        best_units, best_tokens, best_fine = units, tokens, fine
                    if tokens >= target:
                        break
        sized = SizedPrompt(base_id, base, best_units, target, best_tokens, best_fine)
        self._cache[key] = sized
        return sized

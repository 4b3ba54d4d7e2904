"""Real long contexts: a record brought to N tokens, as the server counts them, with real text.

``ContextBuilder.build(record, N, front)`` puts whole units of real text (workloads/prompts/material.py)
before the record's task until the next one would pass N, then the head of one more unit, cut where
the prompt lands on N:

- a ``code`` set gets standard-library source files as repository context, in its last user
  message before the task (``REPO_HEAD``, then one fenced file after another, then the task);
- a ``chat`` set gets its own other records as earlier turns (a user turn, and the recorded reply
  as the assistant's where there is one; turns without a reply join the next user message), then,
  when those run out, Python's documentation topics before the record's first user message.

No unit repeats inside a prompt, no filler is written, and a unit more than 3% of whose word
8-grams would repeat what the prompt holds (or itself) is passed over; a finished prompt whose share
is above 5% is refused (``ContextError``). ``front`` picks where in the pool the prompt starts, and no
two prompts of one builder begin with the same unit while the pool has one left, so requests differ
from their first unit on and the server's prefix cache cannot serve one from another. Tokens are
counted by a ``TokenCounter`` (workloads/prompts/counting.py): the server's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from workloads.prompts.material import (BUILD_DUP, MAX_DUP, DupTracker, Pool, StdlibPool, Unit, docs_pool, dup_share,
                                        turns_pool)
from workloads.prompts.records import CODE, PromptRecord, PromptSet, Turn

REPO_HEAD = "Files from the repository this task belongs to:"
_PER_MESSAGE = 6      # tokens a chat template adds per message, before the counter says otherwise
_STRIDES = (7919, 7927, 7933, 7937, 7949, 7951, 7963, 7993)


class ContextError(ValueError):
    """A prompt that cannot be built to its size with real text, or would repeat itself."""


class TokenCounter(Protocol):
    async def texts(self, texts: list[str]) -> list[int]: ...   # each text's tokens on its own
    async def messages(self, messages: list[dict]) -> int: ...  # a chat request's prompt tokens


@dataclass(frozen=True)
class BuiltPrompt:
    record: PromptRecord
    messages: tuple[Turn, ...]
    target: int                  # the context asked for; 0: the record as it is
    tokens: int | None           # what the counter counted for the messages sent
    units: tuple[str, ...] = ()  # the whole units placed, in order
    cut: str | None = None       # the unit whose head closes the context
    material: str | None = None  # "stdlib", "turns", "docs" (the first pool used); None: as it is
    front: str = ""              # what the prompt starts with, for the prefix-cache policy
    dup_share: float = 0.0

    def chat(self) -> list[dict]:
        return [t.to_json() for t in self.messages]


def as_is(record: PromptRecord) -> BuiltPrompt:
    """The record sent as the source wrote it (no ``--contexts``)."""
    return BuiltPrompt(record, record.messages, 0, None, front=f"record:{record.id}")


def stride(size: int) -> int:
    """A step through a pool of ``size`` that visits every unit before it repeats."""
    return next((s for s in _STRIDES if math.gcd(s, size) == 1), 1)


def assemble(record: PromptRecord, units: list[Unit], cut: str | None, kind: str) -> tuple[Turn, ...]:
    """The messages of ``record`` with ``units`` (then the ``cut`` text) as its context (module docstring)."""
    if kind == CODE:
        blocks = [u.text for u in units] + ([cut] if cut else [])
        if not blocks:
            return record.messages
        head = f"{REPO_HEAD}\n\n" + "\n\n".join(blocks) + "\n\n"
        return (*record.messages[:-1], Turn("user", head + record.prompt))
    system = tuple(t for t in record.messages[:1] if t.role == "system")
    own = record.messages[len(system):]
    turns: list[Turn] = []
    pending: list[str] = []
    for u in units:
        pending.append(u.text)
        if u.reply:
            turns += [Turn("user", "\n\n".join(pending)), Turn("assistant", u.reply)]
            pending = []
    if cut:
        pending.append(cut)
    if pending:
        first = next(i for i, t in enumerate(own) if t.role == "user")
        joined = "\n\n".join(pending) + "\n\n" + own[first].content
        own = (*own[:first], Turn("user", joined), *own[first + 1:])
    return (*system, *turns, *own)


class ContextBuilder:
    def __init__(self, prompts: PromptSet, counter: TokenCounter, max_probes: int = 8) -> None:
        self.prompts = prompts
        self.counter = counter
        self.max_probes = max_probes
        self._pools: list[Pool] | None = None
        self._tokens: dict[tuple[str, str], int] = {}
        self._fronts: set[str] = set()  # units a prompt of this builder began with

    def pools(self) -> list[Pool]:
        if self._pools is None:
            pools: list[Pool] = []
            if self.prompts.kind == CODE:
                pools.append(StdlibPool())
            else:
                turns = turns_pool(self.prompts)
                pools += [turns] if len(turns) > 1 else []
                pools.append(docs_pool())
            self._pools = pools
        return self._pools

    def front_count(self) -> int:
        """How many requests can start with a unit no other started with."""
        return len(self.pools()[0])

    async def _unit_tokens(self, pool: str, unit: Unit) -> int:
        key = (pool, unit.id)
        if key not in self._tokens:
            texts = [unit.text] + ([unit.reply] if unit.reply else [])
            counts = await self.counter.texts(texts)
            self._tokens[key] = sum(counts) + _PER_MESSAGE * len(texts)
        return self._tokens[key]

    async def build(self, record: PromptRecord, target: int, front: int) -> BuiltPrompt:
        base = await self.counter.messages(record.chat())
        if target <= base:
            return BuiltPrompt(record, record.messages, target, base, front=f"record:{record.id}",
                               dup_share=dup_share(_text(record.messages)))
        tracker = DupTracker(_text(record.messages))
        units: list[Unit] = []
        estimate, first_pool, cut_unit = base, None, None
        for pool in self.pools():
            step, start = stride(len(pool)), front * stride(len(pool))
            for i in range(len(pool)):
                unit = pool.unit(start + i * step)
                if unit is None or unit.id == record.id or tracker.added_share(unit.text) > BUILD_DUP:
                    continue
                if not units and unit.id in self._fronts and len(self._fronts) < len(pool):
                    continue  # another prompt began with it: this one begins elsewhere
                cost = await self._unit_tokens(pool.name, unit)
                first_pool = first_pool or pool.name
                if estimate + cost > target:
                    cut_unit = unit
                    break
                units.append(unit)
                tracker.add(unit.text + " " + (unit.reply or ""))
                estimate += cost
            if cut_unit is not None:
                break
        if cut_unit is None and estimate < target:
            raise ContextError(f"not enough real text to bring {record.id!r} to {target} tokens "
                               f"({estimate} reached with every unit of its material)")
        messages, tokens = await self._fit(record, units, cut_unit, target)
        first = units[0] if units else cut_unit
        if first is not None:
            self._fronts.add(first.id)
        share = dup_share(_text(messages))
        if share > MAX_DUP:
            raise ContextError(f"the {target}-token prompt for {record.id!r} repeats {share:.1%} of its word "
                               f"8-grams (more than {MAX_DUP:.0%}): refused")
        return BuiltPrompt(record, messages, target, tokens, tuple(u.id for u in units),
                           cut_unit.id if cut_unit is not None else None, first_pool,
                           f"{first_pool}:{first.id}" if first is not None else "", share)

    async def _fit(self, record: PromptRecord, units: list[Unit], cut_unit: Unit | None,
                   target: int) -> tuple[tuple[Turn, ...], int]:
        """Cut ``cut_unit`` after the character that brings the prompt closest to ``target`` (a
        bracketing search, each guess from the rate measured so far, at most ``max_probes``
        counts); the messages and their count."""

        async def measure(n: int) -> tuple[tuple[Turn, ...], int]:
            cut = cut_unit.text[:n].rstrip() if cut_unit is not None and n > 0 else None
            messages = assemble(record, units, cut or None, self.prompts.kind)
            return messages, await self.counter.messages([t.to_json() for t in messages])

        best = await measure(0)
        if cut_unit is None or best[1] >= target:
            return best
        size = len(cut_unit.text)
        per_char = max(0.05, (await self.counter.texts([cut_unit.text]))[0] / size)
        base = best[1]
        lo, lo_t, hi, hi_t = 0, base, size + 1, None  # counts at lo are below target, at hi above
        n = min(size, max(1, round((target - base) / per_char)))
        for _ in range(self.max_probes):
            messages, tokens = await measure(n)
            if (abs(tokens - target), tokens > target) < (abs(best[1] - target), best[1] > target):
                best = (messages, tokens)
            if tokens == target:
                break
            if tokens < target:
                lo, lo_t = n, tokens
            else:
                hi, hi_t = n, tokens
            if hi - lo <= 1:
                break
            if hi_t is not None:  # between two measured points
                step = (target - lo_t) * (hi - lo) / (hi_t - lo_t)
            else:  # past the last one, at the rate measured so far
                step = (target - lo_t) * lo / (lo_t - base) if lo and lo_t > base else (target - lo_t) / per_char
            n = min(max(lo + round(step), lo + 1), hi - 1, size)
        return best


def _text(messages: tuple[Turn, ...]) -> str:
    return "\n".join(t.content for t in messages)

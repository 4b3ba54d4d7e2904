"""Real text for long contexts, in whole units, and the duplicate check that guards them.

Three kinds of unit, each read from what is on the machine (nothing is shipped or generated):

- ``stdlib``: whole source files of the Python standard library this interpreter runs
  (``sysconfig.get_paths()['stdlib']``; test folders and site-packages left out), as repository
  context before a coding task;
- ``turns``: the other records of the prompt set itself, each its last user message and, where the
  source recorded one, its reply: the earlier turns of a chat set;
- ``docs``: the topics of Python's own documentation (``pydoc_data.topics``), for a chat set with too
  few turns of its own (the built-in ``story``).

A pool's order is fixed (a seeded shuffle), so the same request index gets the same units on every
run and machine with the same Python; units with the same text are kept once. ``DupTracker`` counts
the word 8-grams of what a prompt holds so far; ``dup_share`` is the share of a text's word 8-grams
that repeat an earlier one (0.0: none; the field flags prompts above 5% as repeated text).
"""

from __future__ import annotations

import hashlib
import os
import random
import sysconfig
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from workloads.prompts.records import PromptSet

NGRAM = 8
MAX_DUP = 0.05        # a prompt above this share of repeated word 8-grams is refused
BUILD_DUP = 0.03      # units are chosen to stay under this, well below the refusal
_SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__", "lib2to3"}
_MIN_BYTES, _MAX_BYTES = 1500, 300_000


@dataclass(frozen=True)
class Unit:
    """One whole piece of real text: ``id`` names it in results (a stdlib path, a record id, a topic)."""

    id: str
    text: str            # as placed in a user message
    reply: str | None = None   # turns only: the recorded answer that follows it as an assistant turn


def _hash(words: list[str]) -> list[int]:
    return [hash(tuple(words[i:i + NGRAM])) for i in range(len(words) - NGRAM + 1)]


def ngrams(text: str) -> list[int]:
    return _hash(text.split())


def dup_share(text: str) -> float:
    """The share of ``text``'s word 8-grams that repeat an earlier one."""
    grams = ngrams(text)
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


class DupTracker:
    """Word 8-grams of a prompt under construction: would a unit push the repeated share past a limit?"""

    def __init__(self, text: str = "") -> None:
        self.seen: Counter[int] = Counter(ngrams(text))
        self.total = sum(self.seen.values())
        self.dups = self.total - len(self.seen)

    def added_share(self, text: str) -> float:
        """The share of ``text``'s 8-grams that would repeat one already there or earlier in it."""
        grams = ngrams(text)
        if not grams:
            return 0.0
        new = Counter(grams)
        return sum(n if g in self.seen else n - 1 for g, n in new.items()) / len(grams)

    def add(self, text: str) -> None:
        grams = ngrams(text)
        for g in grams:
            if g in self.seen:
                self.dups += 1
            self.seen[g] += 1
        self.total += len(grams)


def _shuffled(units: list[Unit], seed: str) -> tuple[Unit, ...]:
    seen: set[str] = set()
    kept = []
    for u in units:
        key = hashlib.sha1((u.text + "\0" + (u.reply or "")).encode()).hexdigest()
        if key not in seen:
            seen.add(key)
            kept.append(u)
    random.Random(seed).shuffle(kept)
    return tuple(kept)


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@cache
def _stdlib_paths() -> tuple[str, ...]:
    root = stdlib_root()
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith("test_"):
                path = Path(folder) / name
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                if _MIN_BYTES <= size <= _MAX_BYTES:
                    found.append(str(path.relative_to(root)))
    order = list(found)
    random.Random("stdlib").shuffle(order)
    return tuple(order)


class StdlibPool:
    """The standard library's source files, read one at a time as they are used (a pool of thousands)."""

    name = "stdlib"

    def __init__(self) -> None:
        self.paths = _stdlib_paths()
        self._units: dict[int, Unit | None] = {}

    def __len__(self) -> int:
        return len(self.paths)

    def unit(self, index: int) -> Unit | None:
        index %= len(self.paths)
        if index not in self._units:
            rel = self.paths[index]
            try:
                text = (stdlib_root() / rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            self._units[index] = Unit(rel, f"### {rel}\n```python\n{text.strip()}\n```") if text.strip() else None
        return self._units[index]


class ListPool:
    """A pool held in memory (a set's turns, the docs' topics)."""

    def __init__(self, name: str, units: tuple[Unit, ...]) -> None:
        self.name = name
        self.units = units

    def __len__(self) -> int:
        return len(self.units)

    def unit(self, index: int) -> Unit | None:
        return self.units[index % len(self.units)] if self.units else None


@cache
def docs_pool() -> ListPool:
    from pydoc_data.topics import topics  # Python's own documentation, shipped with the interpreter

    return ListPool("docs", _shuffled([Unit(f"python-docs:{k}", v.strip()) for k, v in sorted(topics.items())
                                       if v.strip()], "docs"))


def turns_pool(prompts: PromptSet) -> ListPool:
    """The set's records as earlier turns: each one's last user message and recorded reply (a prompt
    never takes its own record as context: the builder skips it)."""
    units = [Unit(r.id, r.prompt, r.reply) for r in prompts.records]
    return ListPool("turns", _shuffled(units, prompts.digest()))


Pool = StdlibPool | ListPool

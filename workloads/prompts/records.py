"""What a prompt source hands the workloads: typed records, one per prompt (or conversation).

A record holds what is sent, exactly as the source wrote it: ``messages`` are the recorded history
followed by the last user message, which is sent verbatim and last; ``followups`` are later user
turns that need the model's live reply before them (MT-Bench's second turn, AIPerf's multi_turn
sessions). ``reply`` is a recorded answer to the last user message where the source has one
(ShareGPT's next ``gpt`` turn, GSM8K's ``answer``): never sent for the record itself, but a chat
set's long context uses it when the record serves as an earlier turn of another prompt.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

ROLES = ("system", "user", "assistant")
CODE, CHAT = "code", "chat"   # what a set's long context is made of (workloads/prompts/context.py)


@dataclass(frozen=True)
class Turn:
    role: str      # "system", "user" or "assistant"
    content: str

    def to_json(self) -> dict:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class PromptRecord:
    id: str
    messages: tuple[Turn, ...]           # history, then the last user message (sent verbatim, last)
    followups: tuple[str, ...] = ()      # user turns sent after the live reply, in order
    max_tokens: int | None = None        # the output length the source asks for, if it names one
    category: str | None = None
    reply: str | None = None             # a recorded answer to the last user message (not sent for it)
    format: str = "prompt"               # the format it was read as (workloads/prompts/formats.py)
    problem: str | None = None           # a built-in coding problem: its answers are graded

    def __post_init__(self) -> None:
        if not self.messages or self.messages[-1].role != "user":
            raise ValueError("a prompt record ends with a user message")

    @property
    def prompt(self) -> str:
        """The last user message, as the source wrote it."""
        return self.messages[-1].content

    @property
    def history(self) -> tuple[Turn, ...]:
        return self.messages[:-1]

    def chat(self) -> list[dict]:
        """The messages as a chat request sends them."""
        return [t.to_json() for t in self.messages]

    def to_json(self) -> dict:
        return {"id": self.id, "messages": self.chat(), "followups": list(self.followups),
                "max_tokens": self.max_tokens, "category": self.category, "reply": self.reply,
                "format": self.format, "problem": self.problem}


@dataclass(frozen=True)
class PromptSet:
    """A source's records, in the source's order. ``name``: what results call it (``prompts``), the
    source as the user named it; ``kind``: ``code`` (long contexts from real source files) or
    ``chat`` (from earlier turns of the set); ``skipped``: one line per malformed record left out."""

    name: str
    records: tuple[PromptRecord, ...]
    kind: str = CHAT
    skipped: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()        # the formats its records were read as, in first-seen order
    dataset: str | None = None           # the published dataset it is (presets/papers.toml), when known
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def graded(self) -> bool:
        """Its answers can be graded (the built-in coding problems)."""
        return any(r.problem is not None for r in self.records)

    @property
    def multi_turn(self) -> bool:
        return any(r.followups for r in self.records)

    def digest(self) -> str:
        """A short fingerprint of what is sent (every record's messages and follow-ups), so two
        runs can tell whether they measured the same prompts."""
        h = hashlib.sha256()
        for r in self.records:
            h.update(json.dumps([r.chat(), list(r.followups), r.max_tokens], sort_keys=True).encode())
        return h.hexdigest()[:16]

    def describe(self) -> dict:
        """What run.json's plan records about the set."""
        return {"name": self.name, "records": len(self.records), "kind": self.kind, "formats": list(self.formats),
                "dataset": self.dataset, "skipped": len(self.skipped), "digest": self.digest(),
                "multi_turn": self.multi_turn}

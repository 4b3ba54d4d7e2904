"""What a knob search is asked: ``ddtune search``'s options, as one record.

Its own module, free of the engine, so the console's search screen can hold a request (its fields'
defaults) without loading what runs one; workloads.search.start plans it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchRequest:
    """What a search is asked: ``ddtune search``'s options (the console's screen asks for the first
    three and keeps the rest as given)."""

    space: str
    target_context: int = 4096
    target_concurrency: int = 8
    max_tokens: int = 256
    waves: int = 4
    rungs: int = 3
    passes: int = 1
    max_restarts: int | None = None
    warmup: int | None = None
    start: str | None = None
    out: str | None = None           # None: the default folder, runs/<time>-search
    gpus: tuple[str, ...] | None = None  # the console's one server per GPU (the CLI asks with --parallel)
    prompts: str | None = None       # the prompt source measured (None: the built-in story)
    ignore_eos: bool = False

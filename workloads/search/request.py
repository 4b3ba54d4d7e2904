"""What a knob search is asked: ``ddtune search``'s options, as one record.

Its own module, free of the engine, so the console's search screen can hold a request (its fields'
defaults) without loading what runs one; workloads.search.start plans it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from backends.core import UsageError

if TYPE_CHECKING:
    from backends.knobs import ServerConfig


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

    @classmethod
    def example(cls, config: ServerConfig) -> SearchRequest:
        """The request a search starts from when nothing was asked yet (the console's screen): ``ddtune
        search --help``'s example space, less any knob this config cannot set."""
        from workloads.search.space import example_space

        return cls(example_space(config))

    def from_fields(self, config: ServerConfig, space: str, context: str, concurrency: str,
                    gpus: str) -> SearchRequest:
        """The console's search fields as a request, this one giving what the screen does not ask (waves,
        rungs, tokens); UsageError or ConfigError naming the field and the fix. Reads no file."""
        from backends.machine import parse_gpus
        from workloads.search.space import parse_search_space

        found = parse_search_space(space, config.knob_map, config.block_size, source="space",
                                   table=config.knob_table)
        lanes = None
        if gpus.strip():
            try:
                lanes = parse_gpus(gpus)
            except UsageError as exc:
                raise UsageError(exc.message.replace("--gpus", "GPUs", 1),
                                 hint="e.g. 0,1 (the indices nvidia-smi shows), or empty for this console's server") \
                    from None
        return replace(self, space=found.text(), gpus=lanes,
                       target_context=_positive("target context", context, "4096 (prompt tokens)"),
                       target_concurrency=_positive("concurrency", concurrency, "8 (requests per wave)"))


def _positive(field: str, text: str, example: str) -> int:
    value = text.strip()
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"{field}: {text.strip()!r} is not a whole number of at least 1", hint=f"e.g. {example}")
    return int(value)

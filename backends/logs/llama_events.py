"""The typed facts that ``backends.logs.llamacpp`` finds in a llama.cpp llama-server log: one frozen
dataclass per fact, each a ``LlamaEvent`` (a ``LogEvent``, as SGLang's in backends/logs/events.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from backends.logs.events import LogEvent


@dataclass(frozen=True)
class LlamaEvent(LogEvent):
    """A fact of a llama-server log (every event below is one)."""

@dataclass(frozen=True)
class LlamaModelLoading(LlamaEvent):
    """``load_model: loading model 'PATH'`` (the target) or ``loading draft model 'PATH'``."""

    path: str
    draft: bool = False


@dataclass(frozen=True)
class LlamaModelLoaded(LlamaEvent):
    """``init: model loaded`` (``main: model loaded`` on older builds)."""


@dataclass(frozen=True)
class LlamaSlots(LlamaEvent):
    """``load_model: initializing, n_slots = 2, n_ctx_slot = 2048``: the server's slots."""

    n_slots: int | None
    n_ctx_slot: int | None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {"n_slots": "n_slots", "n_ctx_slot": "n_ctx_slot"}


@dataclass(frozen=True)
class LlamaThreads(LlamaEvent):
    n_threads: int | None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {"n_threads": "n_threads"}


@dataclass(frozen=True)
class LlamaSpecImpl(LlamaEvent):
    """``adding speculative implementation 'draft-dflash'``."""

    kind: str

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {"spec_type": "kind"}


@dataclass(frozen=True)
class LlamaDraftParams(LlamaEvent):
    """``- n_max=16, n_min=0, p_min=0.00``: the draft settings as requested (before any clamp)."""

    n_max: int | None
    n_min: int | None
    p_min: float | None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {"n_max": "n_max", "n_min": "n_min", "p_min": "p_min"}


@dataclass(frozen=True)
class LlamaDraftBlock(LlamaEvent):
    """``- block_size=16, mask_token_id=271, n_extract=2, ...``: the DFlash draft's trained block."""

    block_size: int | None
    mask_token_id: int | None
    n_extract: int | None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {"block_size": "block_size", "mask_token_id": "mask_token_id"}


@dataclass(frozen=True)
class LlamaDraftClamp(LlamaEvent):
    """``requested draft size (n_max=16, n_min=0) exceeds the trained block size 16 -- clamping to 15``:
    the n_max the server runs is ``effective``, and why."""

    requested: int | None
    block_size: int | None
    effective: int | None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {"n_max": "effective", "block_size": "block_size"}


@dataclass(frozen=True)
class LlamaListening(LlamaEvent):
    """``listening on http://HOST:PORT``: the HTTP server is up (after the model loaded)."""

    host: str
    port: int


@dataclass(frozen=True)
class LlamaDraftAcceptance(LlamaEvent):
    """Per request: ``draft acceptance = 1.00000 (59 accepted / 59 generated), mean len = 15.75``
    (older builds: ``mean acceptance length``)."""

    task: int | None
    rate: float | None
    accepted: int
    generated: int
    mean_len: float | None


@dataclass(frozen=True)
class LlamaEvalTime(LlamaEvent):
    """Per request: ``prompt eval time = ...`` or ``eval time = 98.02 ms / 8 tokens (..., 71.42 tokens
    per second)`` (``prompt`` says which)."""

    task: int | None
    prompt: bool
    ms: float
    tokens: int
    tok_s: float | None


@dataclass(frozen=True)
class LlamaFitNotice(LlamaEvent):
    """``E llama_init_from_model: ... dflash requires ctx_other to be set (this warning is normal during
    memory fitting)``: an error-level line that is not a failure."""

    message: str


@dataclass(frozen=True)
class LlamaNotice(LlamaEvent):
    """Any other ``E`` (error) or ``W`` (warning) line: what its level says, not a failure."""

    level: str
    message: str

"""The typed facts that ``logparse.parse_line`` finds in an SGLang server log.

One frozen dataclass per fact. Every event carries the line's timestamp text (``ts``) and its
rank prefix (``ranks``: DP/PP/ATTN_CP/MOE_DP/TP/EP) where the line had them. Formats are those of
docs section 2 to 5 of the SGLang reference (shared/reference/sglang.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

FATAL_KINDS = ("oom", "port_in_use", "scheduler_died", "init_failed", "other")


@dataclass(frozen=True)
class Ranks:
    """The ranks in a scheduler line's prefix, e.g. ``[2026-11-30 09:00:00 DP1 TP3]``."""

    dp: int | None = None
    pp: int | None = None
    attn_cp: int | None = None
    moe_dp: int | None = None
    tp: int | None = None
    ep: int | None = None

    @property
    def is_lead(self) -> bool:
        """True for rank 0 of every dimension: the rank whose copy of a per-rank line counts."""
        return not any((self.dp, self.pp, self.attn_cp, self.moe_dp, self.tp, self.ep))


@dataclass(frozen=True, kw_only=True)
class LogEvent:
    ts: str | None = None
    ranks: Ranks | None = None

    # the line's ``name=value`` fields this event holds, by the line's name -> the attribute: what
    # verification reads of a server's report (``field``) without parsing the line a second time
    LINE_FIELDS: ClassVar[Mapping[str, str]] = {}

    def field(self, name: str) -> tuple[bool, Any] | None:
        """(found, value) of the line's ``name=`` field as parsed; None when this event does not
        speak for that field (then only the line's text can say)."""
        attr = self.LINE_FIELDS.get(name)
        return (True, getattr(self, attr)) if attr is not None else None

    @property
    def is_lead(self) -> bool:
        return self.ranks is None or self.ranks.is_lead

    @property
    def time_s(self) -> float | None:
        """``ts`` as seconds (epoch seconds for dated stamps, seconds of day for bare times)."""
        return ts_seconds(self.ts)


def ts_seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        if ts.count(".") == 3 and ":" not in ts:  # llama.cpp: minutes.seconds.milliseconds.microseconds
            mn, ss, ms, us = ts.split(".")
            return int(mn) * 60 + int(ss) + int(ms) / 1e3 + int(us) / 1e6
        if len(ts) >= 19 and ts[4] == "-":
            return datetime.fromisoformat(ts.replace(",", ".")).timestamp()
        hh, mm, ss = ts.split(":")
        return int(hh) * 3600 + int(mm) * 60 + float(ss)
    except ValueError:
        return None


# --- startup -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerArgs(LogEvent):
    """``server_args=ServerArgs(...)`` (<= 0.5.15) or ``server_args={...}`` (0.5.20+)."""

    args: tuple[tuple[str, str], ...] = ()
    style: str = "ServerArgs"  # or "dict"

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.args:
            if k == key:
                return v
        return default

    def field(self, name: str) -> tuple[bool, Any]:
        """Every server argument is in the dump: one it lacks is one this server does not have."""
        text = self.get(name)
        return text is not None, text


@dataclass(frozen=True)
class WeightLoadBegin(LogEvent):
    avail_gb: float | None


@dataclass(frozen=True)
class ShardProgress(LogEvent):
    done: int
    total: int
    label: str


@dataclass(frozen=True)
class WeightLoadEnd(LogEvent):
    elapsed_s: float | None
    type: str | None
    mem_usage_gb: float | None
    avail_gb: float | None
    quant: str | None = None


@dataclass(frozen=True)
class DraftRunner(LogEvent):
    """``Initialized DFLASH draft runner. ...``: the effective draft window (section 2)."""

    window_size: int | None
    compact_cache: bool
    block_size: int | None
    attention_backend: str | None
    model: str | None = None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {
        "draft_window_size": "window_size", "compact_cache": "compact_cache", "block_size": "block_size",
        "attention_backend": "attention_backend", "model": "model"}


@dataclass(frozen=True)
class DraftRunnerReady(LogEvent):
    mask_token: str | None


@dataclass(frozen=True)
class DDTreeWorker(LogEvent):
    block_size: int | None
    tree_budget: int | None
    max_tree_nodes: int | None

    LINE_FIELDS: ClassVar[Mapping[str, str]] = {
        "block_size": "block_size", "tree_budget": "tree_budget", "max_tree_nodes": "max_tree_nodes"}


@dataclass(frozen=True)
class DraftCudaGraphDisabled(LogEvent):
    reason: str


@dataclass(frozen=True)
class BlockSizeMismatch(LogEvent):
    block_size: int | None
    draft_config_block_size: int | None
    message: str


@dataclass(frozen=True)
class KvCache(LogEvent):
    tokens: int
    dtype: str | None
    k_gb: float | None
    v_gb: float | None
    kv_gb: float | None = None
    pool: str | None = None  # "full" / "swa" for hybrid models


@dataclass(frozen=True)
class MemoryPoolEnd(LogEvent):
    avail_gb: float | None


@dataclass(frozen=True)
class GraphCaptureBegin(LogEvent):
    name: str  # "target verify", "draft verify", "target decode"; "default" for 0.5.10's unnamed
    avail_gb: float | None


@dataclass(frozen=True)
class GraphCaptureSizes(LogEvent):
    batch_sizes: tuple[int, ...]


@dataclass(frozen=True)
class GraphCaptureProgress(LogEvent):
    done: int
    total: int
    bs: int | None
    avail_gb: float | None


@dataclass(frozen=True)
class GraphCaptureEnd(LogEvent):
    name: str
    elapsed_s: float | None
    mem_usage_gb: float | None
    avail_gb: float | None


@dataclass(frozen=True)
class MaxTotalTokens(LogEvent):
    max_total_num_tokens: int | None
    max_running_requests: int | None
    context_len: int | None
    available_gpu_mem_gb: float | None


@dataclass(frozen=True)
class StartupTimings(LogEvent):
    """``Engine startup timings (s): ...``; nested dicts flatten to ``cuda_graph.target verify``."""

    timings: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class ServerStarted(LogEvent):
    pid: int


@dataclass(frozen=True)
class AppStartupComplete(LogEvent):
    pass


@dataclass(frozen=True)
class UvicornRunning(LogEvent):
    host: str
    port: int


@dataclass(frozen=True)
class ServerReady(LogEvent):
    pass


@dataclass(frozen=True)
class HttpRequest(LogEvent):
    method: str
    path: str
    status: int


# --- periodic ------------------------------------------------------------------------------

@dataclass(frozen=True)
class DecodeBatch(LogEvent):
    running_req: int
    tokens: int | None
    token_usage: float | None
    accept_len: float | None
    accept_rate: float | None
    cuda_graph: bool | None
    gen_throughput: float | None
    queue_req: int | None
    swa_tokens: int | None = None
    swa_token_usage: float | None = None
    forward_iter: int | None = None  # ``Decode batch [N],`` (SGLANG_LOG_FORWARD_ITERS)
    cap_len: float | None = None
    block_accept_len: float | None = None

    @property
    def idle(self) -> bool:
        """The line that closes a burst (``#token: 0`` or no request running; a real 0.5.17 prints one at
        the end of each): its ``gen throughput`` divides over a near-empty interval and is no rate."""
        return self.running_req == 0 or self.tokens == 0


@dataclass(frozen=True)
class PrefillBatch(LogEvent):
    new_seq: int
    new_token: int | None
    cached_token: int | None
    token_usage: float | None
    running_req: int | None
    queue_req: int | None
    cuda_graph: bool | None
    input_throughput: float | None
    forward_iter: int | None = None  # ``Prefill batch [N],`` (SGLANG_LOG_FORWARD_ITERS)


# --- endings -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fatal(LogEvent):
    """A line that ends a server. ``generic`` marks a bare Python exception line (``XError: ...``):
    fatal before the server is ready, but SGLang also logs handled request errors that way."""

    kind: str
    message: str
    generic: bool = False

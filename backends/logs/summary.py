"""Fold log events into the summary that ``ddtune inspect`` prints (and other tools read).

``LogSummary.to_json()`` is the exact contract of issue 3, item 4::

    {"server_pid": int|null, "ready": bool,
     "weights": [{"elapsed_s": float, "type": str|null, "mem_usage_gb": float|null}],
     "shard_progress": [done, total]|null,        (the target model's bar, the first model loaded)
     "kv_cache_tokens": [int, ...],
     "cuda_graph": [{"name": str, "elapsed_s": float|null}],
     "draft": {"window_size": int|null, "compact_cache": bool, "block_size": int|null}|null,
     "decode": {"lines": int, "accept_len_mean": float|null, "accept_len_last": float|null,
                "gen_throughput_last": float|null, "running_req_max": int|null},
     "fatal": {"kind": ..., "message": str}|null,
     "notes": [str, ...]}

Per-rank lines (weights, KV cache, graphs) count once: only the lead rank's copy (rank 0 in
every prefix dimension, or no prefix). When an excerpt holds no lead-rank line of one of these
facts (TP0 or DP0 lines not captured), the fact comes from the lowest rank present and a line
of ``notes`` says which rank it came from. A weight load without ``elapsed=`` (older SGLang) takes
its time from the begin/end timestamps, else null. Fatal: the most specific ending wins
(oom, port_in_use > init_failed, named other > scheduler_died > bare exception line), first of
its rank; a bare exception line counts only while the server was not yet ready.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from backends.core.datafile import open_regular
from backends.core.errors import ConfigError, DdtuneError
from backends.logs.splitter import LineSplitter
from backends.logs.events import (DecodeBatch, DraftRunner, Fatal, GraphCaptureBegin, GraphCaptureEnd, KvCache,
    LogEvent, Ranks, ServerReady, ServerStarted, ShardProgress, WeightLoadBegin, WeightLoadEnd)
from backends.logs.llama_events import (LlamaDraftAcceptance, LlamaDraftBlock, LlamaDraftClamp, LlamaDraftParams,
    LlamaEvalTime, LlamaEvent, LlamaListening, LlamaModelLoading, LlamaSpecImpl)
from backends.logs.parse import parse_line

_RANK = {"oom": 0, "port_in_use": 0, "init_failed": 1, "other": 1, "scheduler_died": 2}


def _severity(e: Fatal) -> int:
    """Lower is more telling. A named failure (capture failed, argparse error) outranks the
    scheduler-died echo that follows it; a bare exception line ranks last."""
    return 3 if e.generic else _RANK.get(e.kind, 1)
CHUNK = 1 << 20


@dataclass(frozen=True)
class WeightLoad:
    elapsed_s: float | None
    type: str | None
    mem_usage_gb: float | None


@dataclass(frozen=True)
class GraphCapture:
    name: str
    elapsed_s: float | None


@dataclass(frozen=True)
class DecodeStats:
    lines: int = 0
    accept_len_mean: float | None = None
    accept_len_last: float | None = None
    gen_throughput_last: float | None = None
    running_req_max: int | None = None


@dataclass(frozen=True)
class LogSummary:
    server_pid: int | None = None
    ready: bool = False
    weights: tuple[WeightLoad, ...] = ()
    shard_progress: tuple[int, int] | None = None
    kv_cache_tokens: tuple[int, ...] = ()
    cuda_graph: tuple[GraphCapture, ...] = ()
    draft: DraftRunner | None = None
    decode: DecodeStats = field(default_factory=DecodeStats)
    fatal: Fatal | None = None
    lines: int = 0
    events: int = 0
    notes: tuple[str, ...] = ()  # e.g. which rank a fact came from when the lead rank's line is missing
    llamacpp: dict | None = None  # a llama-server log's own facts (LlamaFacts.to_json); None for SGLang's

    def to_json(self) -> dict:
        d = self.draft
        return ({"llamacpp": self.llamacpp} if self.llamacpp is not None else {}) | {
            "server_pid": self.server_pid,
            "ready": self.ready,
            "weights": [{"elapsed_s": w.elapsed_s, "type": w.type, "mem_usage_gb": w.mem_usage_gb}
                        for w in self.weights],
            "shard_progress": list(self.shard_progress) if self.shard_progress else None,
            "kv_cache_tokens": list(self.kv_cache_tokens),
            "cuda_graph": [{"name": g.name, "elapsed_s": g.elapsed_s} for g in self.cuda_graph],
            "draft": None if d is None else {"window_size": d.window_size, "compact_cache": d.compact_cache,
                                             "block_size": d.block_size},
            "decode": {"lines": self.decode.lines, "accept_len_mean": self.decode.accept_len_mean,
                       "accept_len_last": self.decode.accept_len_last,
                       "gen_throughput_last": self.decode.gen_throughput_last,
                       "running_req_max": self.decode.running_req_max},
            "fatal": None if self.fatal is None else {"kind": self.fatal.kind, "message": self.fatal.message},
            "notes": list(self.notes),
        }


_RANK_ORDER = ("dp", "pp", "attn_cp", "moe_dp", "tp", "ep")
_RANK_NAME = {"dp": "DP", "pp": "PP", "attn_cp": "ATTN_CP", "moe_dp": "MOE_DP", "tp": "TP", "ep": "EP"}


def _rank_order(ranks: Ranks) -> tuple[int, ...]:
    return tuple(getattr(ranks, k) or 0 for k in _RANK_ORDER)


def rank_label(ranks: Ranks) -> str:
    """``DP2 TP2 EP2``: the prefix SGLang printed for these ranks."""
    return " ".join(f"{_RANK_NAME[k]}{getattr(ranks, k)}" for k in _RANK_ORDER if getattr(ranks, k) is not None)


@dataclass
class _RankFacts:
    """The per-rank facts one rank logged; the summary shows one rank's copy."""

    weights: list[WeightLoad] = field(default_factory=list)
    load_begin_s: float | None = None
    kv: list[int] = field(default_factory=list)
    graphs: list[GraphCapture] = field(default_factory=list)

    def add(self, e: LogEvent) -> None:
        if isinstance(e, WeightLoadBegin):
            self.load_begin_s = e.time_s
        elif isinstance(e, WeightLoadEnd):
            elapsed = e.elapsed_s
            end_s = e.time_s
            if elapsed is None and end_s is not None and self.load_begin_s is not None:
                elapsed = round(end_s - self.load_begin_s, 2)
            self.load_begin_s = None
            self.weights.append(WeightLoad(elapsed, e.type, e.mem_usage_gb))
        elif isinstance(e, KvCache):
            self.kv.append(e.tokens)
        elif isinstance(e, GraphCaptureBegin):
            self.graphs.append(GraphCapture(e.name, None))
        elif isinstance(e, GraphCaptureEnd):
            for i in range(len(self.graphs) - 1, -1, -1):
                g = self.graphs[i]
                if g.name == e.name and g.elapsed_s is None:
                    self.graphs[i] = GraphCapture(e.name, e.elapsed_s)
                    break
            else:
                self.graphs.append(GraphCapture(e.name, e.elapsed_s))


@dataclass
class LlamaFacts:
    """What a llama-server log says: where it listened, its models, its DFlash draft settings (the
    requested n_max and the one it runs, with the clamp), and its requests' draft acceptance."""

    listening: str | None = None
    models: list[str] = field(default_factory=list)
    spec_type: str | None = None
    n_max: int | None = None
    n_max_effective: int | None = None
    clamp: str | None = None
    block_size: int | None = None
    requests: int = 0
    accepted: int = 0
    drafted: int = 0
    mean_len_last: float | None = None
    eval_tok_s_last: float | None = None

    def add(self, e: LogEvent) -> bool:
        """Fold ``e``; False when it is no llama.cpp fact."""
        if isinstance(e, LlamaListening):
            self.listening = f"{e.host}:{e.port}"
        elif isinstance(e, LlamaModelLoading):
            self.models.append(("draft " if e.draft else "target ") + e.path)
        elif isinstance(e, LlamaSpecImpl):
            self.spec_type = e.kind
        elif isinstance(e, LlamaDraftParams):
            self.n_max = self.n_max_effective = e.n_max
        elif isinstance(e, LlamaDraftBlock):
            self.block_size = e.block_size
        elif isinstance(e, LlamaDraftClamp):
            self.n_max_effective = e.effective
            self.clamp = f"n_max {e.requested} exceeds the trained block size {e.block_size}: clamped to {e.effective}"
        elif isinstance(e, LlamaDraftAcceptance):
            self.requests += 1
            self.accepted += e.accepted
            self.drafted += e.generated
            self.mean_len_last = e.mean_len
        elif isinstance(e, LlamaEvalTime):
            if not e.prompt:
                self.eval_tok_s_last = e.tok_s
        else:
            return False
        return True

    def to_json(self) -> dict:
        rate = round(self.accepted / self.drafted, 4) if self.drafted else None
        return {"listening": self.listening, "models": list(self.models),
                "draft": {"spec_type": self.spec_type, "n_max": self.n_max, "n_max_effective": self.n_max_effective,
                          "clamp": self.clamp, "block_size": self.block_size},
                "requests": {"count": self.requests, "draft_accepted": self.accepted, "draft_generated": self.drafted,
                             "acceptance_rate": rate, "mean_len_last": self.mean_len_last,
                             "eval_tok_s_last": self.eval_tok_s_last}}


_PER_RANK = (WeightLoadBegin, WeightLoadEnd, KvCache, GraphCaptureBegin, GraphCaptureEnd)
_FACTS = (("weights", "weights"), ("kv", "KV cache"), ("graphs", "CUDA graphs"))


class SummaryBuilder:
    """Incremental fold: ``add(event)`` per event, ``summary()`` at any time."""

    def __init__(self) -> None:
        self.lines = 0
        self.events = 0
        self.pid: int | None = None
        self.ready = False
        self.shards: tuple[int, int] | None = None
        self._ranks: dict[Ranks | None, _RankFacts] = {}  # None: the lead rank (rank 0, or no prefix)
        self.draft: DraftRunner | None = None
        self.decode_lines = 0
        self.accept: list[float] = []
        self.gen_last: float | None = None
        self.running_max: int | None = None
        self.fatal: Fatal | None = None
        self.llama: LlamaFacts | None = None

    def add_line(self, line: str) -> LogEvent | None:
        self.lines += 1
        event = parse_line(line)
        if event is not None:
            self.add(event)
        return event

    def add(self, e: LogEvent) -> None:
        self.events += 1
        if isinstance(e, LlamaEvent):
            self.llama = self.llama or LlamaFacts()
            self.llama.add(e)
            self.ready = self.ready or isinstance(e, LlamaListening)
            return
        if isinstance(e, DecodeBatch):
            self.decode_lines += 1
            if e.accept_len is not None:
                self.accept.append(e.accept_len)
            if e.gen_throughput is not None:
                self.gen_last = e.gen_throughput
            self.running_max = e.running_req if self.running_max is None else max(self.running_max, e.running_req)
        elif isinstance(e, Fatal):
            self._add_fatal(e)
        elif isinstance(e, ServerStarted):
            self.pid = e.pid
        elif isinstance(e, ServerReady):
            self.ready = True
        elif isinstance(e, ShardProgress):
            if not any(f.weights for f in self._ranks.values()):  # the target's bar: later bars are the draft's
                self.shards = (e.done, e.total)
        elif isinstance(e, DraftRunner):
            self.draft = e
        elif isinstance(e, _PER_RANK):
            key = None if e.is_lead else e.ranks
            facts = self._ranks.get(key)
            if facts is None:
                facts = self._ranks[key] = _RankFacts()
            facts.add(e)

    def _add_fatal(self, e: Fatal) -> None:
        if e.generic and self.ready:
            return
        if self.fatal is None or _severity(e) < _severity(self.fatal):
            self.fatal = e

    def _per_rank(self) -> tuple[dict[str, list], tuple[str, ...]]:
        """Each per-rank fact from the lead rank, else from the lowest rank that logged it."""
        picked: dict[str, list] = {}
        notes = []
        others = sorted((k for k in self._ranks if k is not None), key=_rank_order)
        lead = self._ranks.get(None)
        for attr, label in _FACTS:
            values = getattr(lead, attr) if lead is not None else []
            if not values:
                source = next((k for k in others if getattr(self._ranks[k], attr)), None)
                if source is not None:
                    values = getattr(self._ranks[source], attr)
                    notes.append(f"{label}: no rank-0 line in this log; taken from {rank_label(source)}")
            picked[attr] = values
        return picked, tuple(notes)

    def summary(self) -> LogSummary:
        mean = round(sum(self.accept) / len(self.accept), 3) if self.accept else None
        facts, notes = self._per_rank()
        return LogSummary(
            self.pid, self.ready, tuple(facts["weights"]), self.shards, tuple(facts["kv"]), tuple(facts["graphs"]),
            self.draft,
            DecodeStats(self.decode_lines, mean, self.accept[-1] if self.accept else None, self.gen_last,
                        self.running_max),
            self.fatal, self.lines, self.events, notes, self.llama.to_json() if self.llama else None,
        )


def summarize(lines: Iterable[str]) -> LogSummary:
    builder = SummaryBuilder()
    for line in lines:
        builder.add_line(line)
    return builder.summary()


def read_log_lines(path: str | Path, chunk: int = CHUNK, error: type[DdtuneError] = ConfigError,
                   name: str | None = None) -> Iterator[str]:
    """The lines of a log file, streamed in bounded chunks (split on \\n and \\r, ANSI stripped, each
    cut at the splitter's MAX_LINE): a log of any size in bounded memory. Only a regular file is read
    (backends.core.datafile): a FIFO, a device or a /proc file is refused by its type, as ``error``
    naming the file (``name``), before a byte is read."""
    fd, _ = open_regular(path, error, name)
    splitter = LineSplitter()
    with os.fdopen(fd, "rb") as fh:
        while data := fh.read(chunk):
            yield from splitter.feed(data)
    yield from splitter.flush()


def summarize_file(path: str | Path) -> LogSummary:
    return summarize(read_log_lines(path))

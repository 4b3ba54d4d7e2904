"""``parse_line``: one SGLang log line -> one typed event (``backends.logs.events``) or None.

A line in llama.cpp's shape (``0.00.018.842 I ...``) goes to ``backends.logs.llamacpp``: one parser
reads both engines' logs, so ``ddtune inspect`` and the log reader need not know which wrote it.

Pure and total: any text gives an event or None, never an exception. A line is first stripped
of ANSI codes and of the outer prefixes that log collectors add (``backends.logs.prefix``: a
docker-compose tag, docker/kubectl/journald timestamps), then of SGLang's own
``[time{.ms}{ DPn TPn ...}]`` prefix, whose time is the event's ``ts`` (an outer timestamp never
is, so a re-prefixed log gives the same facts). The message is dispatched on its first word, so a
line that matches nothing costs one prefix regex and one dict lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from backends.logs.batch import decode_batch, fields as _fields, prefill_batch
from backends.logs.batch import to_bool as _bool, to_float as _fnum, to_int as _int
from backends.logs.splitter import MAX_LINE, LineSplitter, split_lines, strip_ansi
from backends.logs.llamacpp import looks_like, parse_llama_line
from backends.logs.prefix import MONTH_INITIALS, MONTHS, strip_collector, strip_compose
from backends.logs.events import (
    AppStartupComplete, BlockSizeMismatch, DDTreeWorker, DraftCudaGraphDisabled,
    DraftRunner, DraftRunnerReady, Fatal, GraphCaptureBegin, GraphCaptureEnd, GraphCaptureProgress,
    GraphCaptureSizes, HttpRequest, KvCache, LogEvent, MaxTotalTokens, MemoryPoolEnd,
    Ranks, ServerArgs, ServerReady, ServerStarted, ShardProgress, StartupTimings, UvicornRunning,
    WeightLoadBegin, WeightLoadEnd,
)

__all__ = ["parse_line", "LogEvent", "LineSplitter", "split_lines", "strip_ansi"]  # events: backends.logs.events

_PREFIX = re.compile(
    r"\[(?P<ts>(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+\.py:\d+: )?"
)
# Python logging's default-ish format used by some builds: "2025-12-04 20:35:53 INFO 151972 [f.py:287] "
_PLAIN_PREFIX = re.compile(
    r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?:\d+ )?\[[^\]]*\] "
)
_RANK = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)(\d+)")
_RANK_FIELD = {"DP": "dp", "PP": "pp", "ATTN_CP": "attn_cp", "MOE_DP": "moe_dp", "TP": "tp", "EP": "ep"}

_NUM = r"(-?\d+(?:\.\d+)?)"
_ELAPSED = re.compile(r"elapsed(?:=|: )\s*" + _NUM + r"\s*s")
_MEM_USAGE = re.compile(r"mem usage=" + _NUM + r" ?GB")
_AVAIL = re.compile(r"avail[ _]mem=" + _NUM + r" ?GB")
_TYPE = re.compile(r"type=([^,\s]+)")
_QUANT = re.compile(r"quant=([^,\s]+)")
_KV = re.compile(r"(\w+)=([^,]*)")
_SHARDS = re.compile(r"(?P<label>[^:|]*?shards): *\d+% Completed \| *(?P<done>\d+)/(?P<total>\d+)")
_CAPTURING = re.compile(r"Capturing batches \((?:bs=(?P<bs>\d+) )?(?:avail_mem=" + _NUM + r" ?GB)?\)"
                        r": *\d+%[^|]*\|[^|]*\| *(?P<done>\d+)/(?P<total>\d+)")
_CAPTURE = re.compile(r"Capture (?:(?P<name>[\w ]+?) )?(?:cuda|CUDA) graph (?P<what>begin|end|failed|bs)\b(?P<rest>.*)")
_KV_CACHE = re.compile(r"(?:(?P<pool>Full|SWA) )?KV Cache is allocated\.(?P<rest>.*)")
_STARTED = re.compile(r"Started server process \[(\d+)\]")
_RUNNING = re.compile(r"Uvicorn running on \w+://(?P<host>\[[^\]]*\]|[^:/\s]+):(?P<port>\d+)")
_ACCESS = re.compile(r"\S+ - \"(?P<method>[A-Z]+) (?P<path>\S+) [^\"]*\" (?P<status>\d{3})")
_SERVER_ARGS_KV = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]*)")
_DICT_KV = re.compile(r"'(\w+)': ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,{}]*)")
_TIMING = re.compile(r"'?([\w ]+?)'?(?:=|: )" + _NUM + r"(?=[,}\s]|$)")
_NESTED = re.compile(r"(\w+)=\{([^}]*)\}")
_EXCEPTION = re.compile(r"[\w.]*(?:Error|Exception|Interrupt)(?=:|$)")
_ARGPARSE = re.compile(r"[\w./-]+: error: ")
_MISMATCH = re.compile(r"=(\d+)\D.*?block_size=(\d+)")
_RANK_DIED = re.compile(r"Rank \d+ scheduler (?:died|is dead)")


_RANKS_SEEN: dict[str, Ranks] = {}


def _ranks(text: str) -> Ranks:
    ranks = Ranks(**{_RANK_FIELD[k]: int(v) for k, v in _RANK.findall(text)})
    if len(_RANKS_SEEN) < 4096:
        _RANKS_SEEN[text] = ranks
    return ranks


def parse_line(line: str) -> LogEvent | None:
    """The event on ``line``, or None. Never raises."""
    try:
        return _parse(line)
    except (ValueError, IndexError, AttributeError, TypeError, OverflowError):
        return None


def _parse(line: str) -> LogEvent | None:
    if len(line) > MAX_LINE:
        line = line[:MAX_LINE]
    if "\x1b" in line:
        line = strip_ansi(line)
    line = line.strip()
    if not line:
        return None
    if "| " in line[:64]:
        line = strip_compose(line)
    c = line[0]
    if c == "[":
        m = _PREFIX.match(line)
        if m is None and line.startswith("[pod/"):
            line = strip_collector(line)
            if not line:
                return None
            c = line[0]
            m = _PREFIX.match(line) if c == "[" else None
    elif (c.isdigit() and line[10:11] == "T") or (c in MONTH_INITIALS and line[:3] in MONTHS):
        line = strip_collector(line)
        if not line:
            return None
        c = line[0]
        m = _PREFIX.match(line) if c == "[" else None
    else:
        m = None
    if m is None and looks_like(line):
        # llama.cpp's llama-server (backends.logs.llamacpp), bare or behind a collector's prefix: its
        # lines never open with SGLang's "[stamp]" nor a collector's ISO time or month name
        return parse_llama_line(line)
    ts = None
    ranks = None
    if m is not None:
        ts = m.group("ts")
        text = m.group("ranks")
        if text:
            ranks = _RANKS_SEEN.get(text) or _ranks(text)
        line = line[m.end():]
    elif c.isdigit() and (m := _PLAIN_PREFIX.match(line)):
        ts = m.group("ts")
        line = line[m.end():]
    if not line:
        return None
    word = line.split(" ", 1)[0]
    handler = _HANDLERS.get(word)
    if handler is not None:
        event = handler(line, ts, ranks)
        if event is not None:
            return event
    if word[-1] == ":" or ("=" in word and word.startswith(("server_args=", "max_total_num_tokens="))):
        return _colon_word(line, word, ts, ranks)
    if "shards:" in line and "Completed" in line:
        return _shards(line, ts, ranks)
    if word in ("Exception", "KeyboardInterrupt") or (
            word.endswith(("Error", "Exception")) and _EXCEPTION.fullmatch(word)):
        return _exception(line, ts, ranks)
    return None


# --- helpers -------------------------------------------------------------------------------

def _f(rx: re.Pattern[str], text: str) -> float | None:
    m = rx.search(text)
    return float(m.group(1)) if m else None


def _gb(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value.strip().removesuffix("GB").strip())
    except ValueError:
        return None


def _pairs(text: str) -> dict[str, str]:
    return {k: v.strip() for k, v in _KV.findall(text)}


# --- handlers, keyed by the message's first word -------------------------------------------

def _load(line: str, ts, ranks) -> LogEvent | None:
    if line.startswith("Load weight begin."):
        return WeightLoadBegin(_f(_AVAIL, line), ts=ts, ranks=ranks)
    if line.startswith("Load weight end."):
        m = _TYPE.search(line)
        q = _QUANT.search(line)
        return WeightLoadEnd(_f(_ELAPSED, line), m.group(1) if m else None, _f(_MEM_USAGE, line),
                             _f(_AVAIL, line), q.group(1) if q else None, ts=ts, ranks=ranks)
    if "shards:" in line:
        return _shards(line, ts, ranks)
    return None


def _shards(line: str, ts, ranks) -> LogEvent | None:
    m = _SHARDS.search(line)
    if not m:
        return None
    return ShardProgress(int(m.group("done")), int(m.group("total")), m.group("label").strip(), ts=ts, ranks=ranks)


def _initialized(line: str, ts, ranks) -> LogEvent | None:
    if line.startswith("Initialized DFLASH draft runner."):
        p = _pairs(line[32:])
        window = _int(p.get("draft_window_size"))
        compact = _bool(p.get("compact_cache"))
        return DraftRunner(window, compact if compact is not None else window is not None,
                           _int(p.get("block_size")), p.get("attention_backend"), p.get("model"),
                           ts=ts, ranks=ranks)
    if line.startswith("Initialized DDTree worker."):
        p = _pairs(line[26:])
        return DDTreeWorker(_int(p.get("block_size")), _int(p.get("tree_budget")),
                            _int(p.get("max_tree_nodes")), ts=ts, ranks=ranks)
    return None


def _dflash(line: str, ts, ranks) -> LogEvent | None:
    if line.startswith("DFLASH draft runner ready."):
        return DraftRunnerReady(_pairs(line).get("mask_token"), ts=ts, ranks=ranks)
    if line.startswith("DFLASH block size mismatch:"):
        m = _MISMATCH.search(line)
        return BlockSizeMismatch(_int(m.group(1)) if m else None, _int(m.group(2)) if m else None,
                                 line, ts=ts, ranks=ranks)
    return None


def _disable(line: str, ts, ranks) -> LogEvent | None:
    if line.startswith("Disable DFLASH draft cuda graph"):
        _, _, reason = line.partition(" because ")
        return DraftCudaGraphDisabled(reason.strip() or line, ts=ts, ranks=ranks)
    return None


def _kv(line: str, ts, ranks) -> LogEvent | None:
    m = _KV_CACHE.match(line)
    if not m:
        return None
    f = _fields(m.group("rest"))
    tokens = _int(f.get("#tokens"))
    if tokens is None:
        return None
    pool = m.group("pool")
    return KvCache(tokens, f.get("dtype"), _gb(f.get("K size")), _gb(f.get("V size")), _gb(f.get("KV size")),
                   pool.lower() if pool else None, ts=ts, ranks=ranks)


def _memory(line: str, ts, ranks) -> LogEvent | None:
    if line.startswith("Memory pool end."):
        return MemoryPoolEnd(_f(_AVAIL, line), ts=ts, ranks=ranks)
    return None


def _capture(line: str, ts, ranks) -> LogEvent | None:
    m = _CAPTURE.match(line)
    if not m:
        return None
    name = (m.group("name") or "default").strip()
    what, rest = m.group("what"), m.group("rest")
    if what == "begin":
        return GraphCaptureBegin(name, _f(_AVAIL, rest), ts=ts, ranks=ranks)
    if what == "end":
        return GraphCaptureEnd(name, _f(_ELAPSED, rest), _f(_MEM_USAGE, rest), _f(_AVAIL, rest), ts=ts, ranks=ranks)
    if what == "bs":
        sizes = tuple(int(x) for x in re.findall(r"\d+", rest[:4096]))
        return GraphCaptureSizes(sizes, ts=ts, ranks=ranks)
    return _fatal("oom" if "out of memory" in line.lower() else "other", line, ts, ranks)


def _capturing(line: str, ts, ranks) -> LogEvent | None:
    m = _CAPTURING.match(line)
    if not m:
        return None
    return GraphCaptureProgress(int(m.group("done")), int(m.group("total")), _int(m.group("bs")),
                                _fnum(m.group(2)), ts=ts, ranks=ranks)


def _engine(line: str, ts, ranks) -> LogEvent | None:
    if not line.startswith("Engine startup timings"):
        return None
    body = line.partition(":")[2]
    timings: list[tuple[str, float]] = []
    for outer, inner in _NESTED.findall(body):
        timings.extend((f"{outer}.{k.strip()}", float(v)) for k, v in _TIMING.findall(inner))
    flat = _NESTED.sub("", body)
    timings.extend((k.strip(), float(v)) for k, v in _TIMING.findall(flat))
    return StartupTimings(tuple(timings), ts=ts, ranks=ranks)


def _the(line: str, ts, ranks) -> LogEvent | None:
    if line.startswith("The server is fired up and ready to roll"):
        return ServerReady(ts=ts, ranks=ranks)
    return None


def _uvicorn(line: str, ts, ranks) -> LogEvent | None:
    body = line[5:].lstrip()
    if body.startswith("Started server process"):
        m = _STARTED.match(body)
        return ServerStarted(int(m.group(1)), ts=ts, ranks=ranks) if m else None
    if body.startswith("Uvicorn running on"):
        m = _RUNNING.match(body)
        return UvicornRunning(m.group("host").strip("[]"), int(m.group("port")), ts=ts, ranks=ranks) if m else None
    if body.startswith("Application startup complete"):
        return AppStartupComplete(ts=ts, ranks=ranks)
    m = _ACCESS.match(body)
    if m:
        return HttpRequest(m.group("method"), m.group("path"), int(m.group("status")), ts=ts, ranks=ranks)
    return None


def _uvicorn_error(line: str, ts, ranks) -> LogEvent | None:
    if "[Errno 98]" in line or "address already in use" in line.lower():
        return _fatal("port_in_use", line, ts, ranks)
    return None


def _starts(prefix: str, kind: str) -> Callable[[str, object, object], LogEvent | None]:
    def handler(line: str, ts, ranks) -> LogEvent | None:
        return _fatal(kind, line, ts, ranks) if line.startswith(prefix) else None
    return handler


def _rank(line: str, ts, ranks) -> LogEvent | None:
    if _RANK_DIED.match(line):
        return _fatal("scheduler_died", line, ts, ranks)
    return None


def _colon_word(line: str, word: str, ts, ranks) -> LogEvent | None:
    if word.startswith("server_args="):
        body = line[12:]
        if body.startswith("{"):
            pairs = tuple((k, v.strip().strip("'\"")) for k, v in _DICT_KV.findall(body))
            return ServerArgs(pairs, "dict", ts=ts, ranks=ranks)
        pairs = tuple((k, v.strip().strip("'\"")) for k, v in _SERVER_ARGS_KV.findall(body.partition("(")[2]))
        return ServerArgs(pairs, "ServerArgs", ts=ts, ranks=ranks)
    if word.startswith("max_total_num_tokens="):
        p = _pairs(line)
        return MaxTotalTokens(_int(p.get("max_total_num_tokens")), _int(p.get("max_running_requests")),
                              _int(p.get("context_len")), _gb(p.get("available_gpu_mem")), ts=ts, ranks=ranks)
    if _EXCEPTION.fullmatch(word[:-1]):
        return _exception(line, ts, ranks)
    if _ARGPARSE.match(line):
        return _fatal("other", line, ts, ranks)
    return None


def _exception(line: str, ts, ranks) -> LogEvent | None:
    """A bare Python exception line, the end of a traceback: ``torch.OutOfMemoryError: ...``."""
    low = line.lower()
    if "out of memory" in low or "outofmemoryerror" in low or "not enough memory." in low:
        return _fatal("oom", line, ts, ranks)
    if "[errno 98]" in low or "address already in use" in low:
        return _fatal("port_in_use", line, ts, ranks)
    if "capture cuda graph failed" in low:
        return _fatal("other", line, ts, ranks)
    return Fatal("other", line, True, ts=ts, ranks=ranks)


def _fatal(kind: str, line: str, ts, ranks) -> Fatal:
    return Fatal(kind, line, False, ts=ts, ranks=ranks)


_HANDLERS: dict[str, Callable[[str, object, object], LogEvent | None]] = {
    "Decode": decode_batch, "Prefill": prefill_batch, "Load": _load, "Loading": _load,
    "Multi-thread": _shards, "Initialized": _initialized, "DFLASH": _dflash, "Disable": _disable,
    "KV": _kv, "Full": _kv, "SWA": _kv, "Memory": _memory, "Capture": _capture,
    "Capturing": _capturing, "Engine": _engine, "The": _the, "INFO:": _uvicorn,
    "ERROR:": _uvicorn_error, "Rank": _rank,
    "Not": _starts("Not enough memory.", "oom"),
    "Scheduler": _starts("Scheduler hit an exception", "scheduler_died"),
    "Received": _starts("Received sigquit from a child process", "scheduler_died"),
    # the launcher's handler when a child dies once serving began (recorded on 0.5.23)
    "SIGQUIT": _starts("SIGQUIT received.", "scheduler_died"),
    "Initialization": _starts("Initialization failed.", "init_failed"),
}

"""``parse_llama_line``: one line of llama.cpp's ``llama-server`` log -> one typed event or None.

Pure and total, like ``backends.logs.parse`` (which hands it every line in llama.cpp's shape). A
line is ``[SECONDS.MS.US ]L MESSAGE`` (timestamp optional, ``L`` the level: I, W, E, D) or the bare
message; the message is matched by what it says, not by its ``srv  func:`` tag, which moves between
builds. Formats: shared/reference/llamacpp.md ("Log facts") and runs of the xllamacpp wheel
(llama.cpp b11549).

An ``E`` line is an error but not a failure, except those that end the server (the model does not
load, the port cannot be bound, an argument is refused); the ``dflash requires ctx_other`` line of
the memory fitting is neither (``LlamaFitNotice``).
"""

from __future__ import annotations

import re

from backends.logs.batch import to_float, to_int
from backends.logs.events import Fatal, LogEvent
from backends.logs.llama_events import (LlamaDraftAcceptance, LlamaDraftBlock, LlamaDraftClamp, LlamaDraftParams,
    LlamaEvalTime, LlamaFitNotice, LlamaListening, LlamaModelLoaded, LlamaModelLoading, LlamaNotice, LlamaSlots,
    LlamaSpecImpl, LlamaThreads)

PREFIX = re.compile(r"(?P<ts>\d+\.\d\d\.\d\d\d\.\d\d\d )?(?P<level>[IWEDC]) (?=\S)")
# a bare message begins with one of these (a build that prints no level or time)
BARE_WORDS = ("srv", "slot", "main:", "init:", "load_model:", "common_speculative_impl_draft_dflash:",
              "common_speculative_init_result:", "llama_init_from_model:", "error:", "cmn")
_KV = re.compile(r"(\w+)\s*=\s*([^,\s)]+)")
_LOADING = re.compile(r"loading (?P<draft>draft )?model '(?P<path>[^']*)'")
_LISTEN = re.compile(r"listening on \w+://(?P<host>\[[^\]]*\]|[^:/\s]+):(?P<port>\d+)")
_IMPL = re.compile(r"adding speculative implementation '(?P<kind>[^']+)'")
_CLAMP = re.compile(r"n_max=(?P<req>\d+).*?trained block size (?P<block>\d+).*?clamping to (?P<eff>\d+)")
_ACCEPT = re.compile(r"draft acceptance(?: rate)? = (?P<rate>[\d.]+) \(\s*(?P<acc>\d+) accepted /\s*(?P<gen>\d+) "
                     r"generated\)(?:, mean (?:len|acceptance length) =\s*(?P<len>[\d.]+))?")
_EVAL = re.compile(r"(?P<prompt>prompt )?eval time =\s*(?P<ms>[\d.]+) ms /\s*(?P<n>\d+) tokens.*?"
                   r"(?P<tps>[\d.]+) tokens per second")
_TASK = re.compile(r"task (\d+)")
_FATAL = (("failed to open gguf file", "init_failed"), ("couldn't bind", "port_in_use"),
          ("address already in use", "port_in_use"),
          ("failed to load model", "init_failed"), ("exiting due to", "init_failed"),
          ("error: invalid argument", "other"), ("error: unknown argument", "other"),
          ("the server did not start", "init_failed"), ("error while handling argument", "other"))


def looks_like(line: str) -> bool:
    """Whether ``line`` (stripped) has llama.cpp's shape: a timestamp or a level letter first."""
    return PREFIX.match(line) is not None or line.startswith(BARE_WORDS)


def parse_llama_line(line: str) -> LogEvent | None:
    try:
        return _parse(line)
    except (ValueError, IndexError, AttributeError, TypeError, OverflowError):
        return None


def _pairs(text: str) -> dict[str, str]:
    return {k: v for k, v in _KV.findall(text)}


def _parse(line: str) -> LogEvent | None:
    m = PREFIX.match(line)
    ts, level = (m.group("ts"), m.group("level")) if m else (None, None)
    text = line[m.end():] if m else line
    ts = ts.strip() if ts else None
    if "dflash requires ctx_other" in text:
        return LlamaFitNotice(text, ts=ts)
    low = text.lower()
    for needle, kind in _FATAL:
        if needle in low:
            return Fatal(kind, text, False, ts=ts)
    if "draft acceptance" in text and (a := _ACCEPT.search(text)):
        task = _TASK.search(text)
        return LlamaDraftAcceptance(int(task.group(1)) if task else None, to_float(a.group("rate")),
                                    int(a.group("acc")), int(a.group("gen")), to_float(a.group("len")), ts=ts)
    if "eval time" in text and (e := _EVAL.search(text)):
        task = _TASK.search(text)
        return LlamaEvalTime(int(task.group(1)) if task else None, bool(e.group("prompt")), float(e.group("ms")),
                             int(e.group("n")), to_float(e.group("tps")), ts=ts)
    if "loading" in text and (lm := _LOADING.search(text)):
        return LlamaModelLoading(lm.group("path"), bool(lm.group("draft")), ts=ts)
    if text.rstrip().endswith("model loaded"):
        return LlamaModelLoaded(ts=ts)
    if "listening on" in text and (ls := _LISTEN.search(text)):
        return LlamaListening(ls.group("host").strip("[]"), int(ls.group("port")), ts=ts)
    if "n_slots" in text:
        p = _pairs(text)
        return LlamaSlots(to_int(p.get("n_slots")), to_int(p.get("n_ctx_slot")), ts=ts)
    if "threadpool init" in text:
        return LlamaThreads(to_int(_pairs(text).get("n_threads")), ts=ts)
    if "speculative implementation" in text and (im := _IMPL.search(text)):
        return LlamaSpecImpl(im.group("kind"), ts=ts)
    if "clamping to" in text and (c := _CLAMP.search(text)):
        return LlamaDraftClamp(int(c.group("req")), int(c.group("block")), int(c.group("eff")), ts=ts)
    if "- n_max=" in text:
        p = _pairs(text)
        return LlamaDraftParams(to_int(p.get("n_max")), to_int(p.get("n_min")), to_float(p.get("p_min")), ts=ts)
    if "- block_size=" in text:
        p = _pairs(text)
        return LlamaDraftBlock(to_int(p.get("block_size")), to_int(p.get("mask_token_id")), to_int(p.get("n_extract")),
                               ts=ts)
    if level == "E" and text.startswith("error"):
        return Fatal("other", text, False, ts=ts)
    if level in ("E", "W"):
        return LlamaNotice(level, text, ts=ts)
    return None

"""parse_line and the line splitter: one test row per fact of the SGLang reference (sections 2-5),
the prefixes and version variants, the fatal endings, and lines that must stay unrecognised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.logs.splitter import MAX_LINE, TRUNCATED_MARK, LineSplitter, split_lines, strip_ansi
from backends.logs.events import (
    AppStartupComplete, BlockSizeMismatch, DDTreeWorker, DecodeBatch, DraftCudaGraphDisabled,
    DraftRunner, DraftRunnerReady, Fatal, GraphCaptureBegin, GraphCaptureEnd, GraphCaptureProgress,
    GraphCaptureSizes, HttpRequest, KvCache, MaxTotalTokens, MemoryPoolEnd, PrefillBatch, Ranks,
    ServerArgs, ServerReady, ServerStarted, ShardProgress, StartupTimings, UvicornRunning,
    WeightLoadBegin, WeightLoadEnd, ts_seconds,
)
from backends.logs.parse import parse_line
from backends.logs.summary import summarize_file

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
T = "2026-11-30 09:00:08"

CASES = [
    (f"[{T}] Load weight begin. avail mem=138.20 GB", WeightLoadBegin(138.2, ts=T)),
    ("Multi-thread loading shards:  50% Completed | 2/4 [00:02<00:02,  1.10s/it]",
     ShardProgress(2, 4, "Multi-thread loading shards")),
    ("Loading safetensors checkpoint shards:   0% Completed | 0/30 [00:00<?, ?it/s]",
     ShardProgress(0, 30, "Loading safetensors checkpoint shards")),
    (f"[{T}] Load weight end. elapsed=6.01 s, type=Qwen3ForCausalLM, avail mem=122.80 GB, mem usage=15.40 GB.",
     WeightLoadEnd(6.01, "Qwen3ForCausalLM", 15.4, 122.8, ts=T)),
    (f"[{T}] Load weight end. elapsed=6.01 s, type=Qwen3ForCausalLM, quant=fp8, avail mem=122.80 GB, "
     "mem usage=9.40 GB.",
     WeightLoadEnd(6.01, "Qwen3ForCausalLM", 9.4, 122.8, "fp8", ts=T)),
    ("[23:17:01 TP7] Load weight end. type=DeepseekV2ForCausalLM, dtype=torch.bfloat16, avail mem=22.01 GB",
     WeightLoadEnd(None, "DeepseekV2ForCausalLM", None, 22.01, ts="23:17:01", ranks=Ranks(tp=7))),
    (f"[{T}] Initialized DFLASH draft runner. attention_backend=flashinfer, model=DFlashDraftModel, "
     "block_size=16, draft_window_size=2048, compact_cache=True",
     DraftRunner(2048, True, 16, "flashinfer", "DFlashDraftModel", ts=T)),
    (f"[{T}] Initialized DFLASH draft runner. attention_backend=fa3, model=DFlashDraftModel, "
     "block_size=16, draft_window_size=None, compact_cache=False",
     DraftRunner(None, False, 16, "fa3", "DFlashDraftModel", ts=T)),
    (f"[{T}] DFLASH draft runner ready. mask_token=<|MASK|>, mask_token_id=151669", DraftRunnerReady("<|MASK|>", ts=T)),
    (f"[{T}] Initialized DDTree worker. block_size=16, tree_budget=15, max_tree_nodes=64",
     DDTreeWorker(16, 15, 64, ts=T)),
    (f"[{T}] Disable DFLASH draft cuda graph because the draft backend is torch_native.",
     DraftCudaGraphDisabled("the draft backend is torch_native.", ts=T)),
    (f"[{T}] DFLASH block size mismatch: using speculative_num_draft_tokens=8 but draft config block_size=11.",
     BlockSizeMismatch(8, 11, "DFLASH block size mismatch: using speculative_num_draft_tokens=8 but draft config "
                              "block_size=11.", ts=T)),
    (f"[{T}] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 700000, K size: 48.06 GB, V size: 48.06 GB",
     KvCache(700000, "torch.bfloat16", 48.06, 48.06, ts=T)),
    ("[2025-10-16 09:06:22 TP5] KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB",
     KvCache(2795207, None, 53.31, 53.31, ts="2025-10-16 09:06:22", ranks=Ranks(tp=5))),
    (f"[{T}] SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 4096, KV size: 0.50 GB",
     KvCache(4096, "torch.bfloat16", None, None, 0.5, "swa", ts=T)),
    (f"[{T}] Memory pool end. avail mem=11.60 GB", MemoryPoolEnd(11.6, ts=T)),
    (f"[{T}] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=16, avail mem=11.50 GB",
     GraphCaptureBegin("target verify", 11.5, ts=T)),
    (f"[{T}] Capture draft verify CUDA graph end. bs=[1, 2, 4], elapsed=4.20 s, mem usage=1.20 GB, avail mem=10.30 GB.",
     GraphCaptureEnd("draft verify", 4.2, 1.2, 10.3, ts=T)),
    (f"[{T}] Capture cuda graph begin. This can take up to several minutes. avail mem=16.80 GB",
     GraphCaptureBegin("default", 16.8, ts=T)),
    (f"[{T}] Capture cuda graph end. Time elapsed: 18.27 s. mem usage=0.95 GB. avail mem=15.85 GB.",
     GraphCaptureEnd("default", 18.27, 0.95, 15.85, ts=T)),
    (f"[{T}] Capture cuda graph bs [1, 2, 4, 8]", GraphCaptureSizes((1, 2, 4, 8), ts=T)),
    ("Capturing batches (bs=48 avail_mem=20.13 GB):  12%|█▎        | 1/8 [00:05<00:39,  5.62s/it]",
     GraphCaptureProgress(1, 8, 48, 20.13)),
    ("Capturing batches (avail_mem=12.55 GB):   0%|          | 0/23 [00:00<?, ?it/s]",
     GraphCaptureProgress(0, 23, None, 12.55)),
    (f"[{T}] max_total_num_tokens=700000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
     "max_running_requests=48, context_len=40960, available_gpu_mem=9.10 GB",
     MaxTotalTokens(700000, 48, 40960, 9.1, ts=T)),
    (f"[{T}] Engine startup timings (s): load_weight=6.72, kv_cache_allocation=1.02, scheduler_e2e=29.80, "
     "cuda_graph={'target verify': 13.0}, tokenizer_e2e=1.90",
     StartupTimings((("cuda_graph.target verify", 13.0), ("load_weight", 6.72), ("kv_cache_allocation", 1.02),
                     ("scheduler_e2e", 29.8), ("tokenizer_e2e", 1.9)), ts=T)),
    (f"[{T}] INFO:     Started server process [41235]", ServerStarted(41235, ts=T)),
    ("INFO:     Started server process [7]", ServerStarted(7)),
    (f"[{T}] INFO:     Application startup complete.", AppStartupComplete(ts=T)),
    (f"[{T}] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
     UvicornRunning("127.0.0.1", 30000, ts=T)),
    ("INFO:     Uvicorn running on http://[::1]:8000 (Press CTRL+C to quit)", UvicornRunning("::1", 8000)),
    (f'[{T}] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK',
     HttpRequest("POST", "/generate", 200, ts=T)),
    (f"[{T}] The server is fired up and ready to roll!", ServerReady(ts=T)),
    (f"[{T} TP0] Decode batch, #running-req: 3, #token: 2700, token usage: 0.01, accept len: 3.52, "
     "accept rate: 0.17, cuda graph: True, gen throughput (token/s): 610.40, #queue-req: 0",
     DecodeBatch(3, 2700, 0.01, 3.52, 0.17, True, 610.4, 0, ts=T, ranks=Ranks(tp=0))),
    (f"[{T}] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, cuda graph: False, "
     "gen throughput (token/s): 1447.08, #queue-req: 0, ",
     DecodeBatch(46, 34901, 0.19, None, None, False, 1447.08, 0, ts=T)),
    (f"[{T}] Decode batch, #running-req: 3, #full token: 100, full token usage: 0.01, #swa token: 50, "
     "swa token usage: 0.02, accept len: 3.10, accept rate: 0.40, cuda graph: True, gen throughput (token/s): 100.00, "
     "#queue-req: 0", DecodeBatch(3, 100, 0.01, 3.1, 0.4, True, 100.0, 0, 50, 0.02, ts=T)),
    (f"[{T}] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, "
     "#queue-req: 0, #pending-token: 0, cuda graph: True, input throughput (token/s): 559.53",
     PrefillBatch(1, 158, 0, 0.08, 31, 0, True, 559.53, ts=T)),
]


@pytest.mark.parametrize("line,expected", CASES, ids=[type(e).__name__ + str(i) for i, (_, e) in enumerate(CASES)])
def test_each_fact_parses_to_its_event(line, expected):
    assert parse_line(line) == expected


def test_server_args_both_dump_styles():
    old = parse_line(f"[{T}] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', port=30000, "
                     "speculative_dflash_draft_window_size=None, json_model_override_args='{}', tp_size=2)")
    new = parse_line(f"[{T}] server_args={{'model_path': 'Qwen/Qwen3-8B', 'port': 30000, "
                     "'speculative_draft_window_size': 2048, 'cuda_graph_bs': [1, 2]}")
    assert isinstance(old, ServerArgs) and old.style == "ServerArgs"
    assert old.get("model_path") == "Qwen/Qwen3-8B" and old.get("tp_size") == "2"
    assert old.get("speculative_dflash_draft_window_size") == "None"
    assert isinstance(new, ServerArgs) and new.style == "dict"
    assert new.get("speculative_draft_window_size") == "2048" and new.get("port") == "30000"


@pytest.mark.parametrize("prefix,ranks,ts", [
    ("[2026-11-30 09:00:00 DP1 TP3] ", Ranks(dp=1, tp=3), "2026-11-30 09:00:00"),
    ("[2026-11-30 09:00:00.123 DP0 PP1 ATTN_CP2 MOE_DP3 TP4 EP5] ", Ranks(0, 1, 2, 3, 4, 5), "2026-11-30 09:00:00.123"),
    ("[23:17:01 TP7] ", Ranks(tp=7), "23:17:01"),
    ("svc-1  | [2026-11-30 09:00:00 TP0] ", Ranks(tp=0), "2026-11-30 09:00:00"),
    ("2025-12-04 20:35:53 INFO 151972 [scheduler.py:287] ", None, "2025-12-04 20:35:53"),
    ("[2026-01-14 05:25:33] INFO scheduler.py:1565: ", None, "2026-01-14 05:25:33"),
])
def test_prefixes_are_parsed_and_kept(prefix, ranks, ts):
    event = parse_line(prefix + "Memory pool end. avail mem=11.87 GB")
    assert event == MemoryPoolEnd(11.87, ts=ts, ranks=ranks)


def test_lead_rank_and_timestamps():
    assert parse_line("[2026-11-30 09:00:00 DP0 TP0 EP0] Memory pool end. avail mem=1.00 GB").is_lead
    assert not parse_line("[2026-11-30 09:00:00 DP0 TP1] Memory pool end. avail mem=1.00 GB").is_lead
    assert ts_seconds("23:17:01") == 23 * 3600 + 17 * 60 + 1
    assert ts_seconds("2026-11-30 09:00:01") - ts_seconds("2026-11-30 09:00:00") == 1
    assert ts_seconds("garbage") is None


def test_ansi_codes_are_ignored():
    line = "\x1b[32m[2026-11-30 09:00:39] The server is fired up and ready to roll!\x1b[0m"
    assert parse_line(line) == ServerReady(ts="2026-11-30 09:00:39")
    assert strip_ansi("\x1b[1;31mred\x1b[0m \x1b[Aup") == "red up"


FATALS = [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.", "oom"),
    ("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB.", "oom"),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "oom"),
    (f"[{T} TP0] Not enough memory. Please try to increase --mem-fraction-static.", "oom"),
    (f"[{T}] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
     "port_in_use"),
    ("OSError: [Errno 98] Address already in use", "port_in_use"),
    (f"[{T}] Rank 0 scheduler died during initialization (exit code: -9).", "scheduler_died"),
    (f"[{T}] Received sigquit from a child process. It usually means the child failed.", "scheduler_died"),
    (f"[{T}] SIGQUIT received. signum=None, frame=None. It usually means one child failed.", "scheduler_died"),
    (f"[{T} DP7 TP7] Scheduler hit an exception: Traceback (most recent call last):", "scheduler_died"),
    (f"[{T}] Initialization failed. warmup error: Traceback (most recent call last):", "init_failed"),
    ("Exception: Capture cuda graph failed: ", "other"),
    ("launch_server.py: error: unrecognized arguments: --speculative-dflash-draft-window-size 2048", "other"),
    ("ValueError: --speculative-draft-window-size must be positive, got 0.", "other"),
]


@pytest.mark.parametrize("line,kind", FATALS)
def test_fatal_endings_are_classified(line, kind):
    event = parse_line(line)
    assert isinstance(event, Fatal), line
    assert event.kind == kind
    assert event.message in line


def test_bare_exception_lines_are_marked_generic():
    assert parse_line("ValueError: bad request").generic is True
    assert parse_line("torch.OutOfMemoryError: CUDA out of memory.").generic is False


@pytest.mark.parametrize("line", [
    "Traceback (most recent call last):",
    '  File "/x/scheduler.py", line 3011, in run_scheduler_process',
    "    raise Exception(",
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    f"[{T}] Ignore import error when loading sglang.srt.models.mindspore: name 'Tensor' is not defined",
    f"[{T}] Init torch distributed ends. mem usage=2.01 GB",
    f"[{T}] INFO:     Waiting for application startup.",
    f'[{T}] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 500 Internal Server Error',
    f"[{T}] WARNING: the out of memory killer was not involved",
    "ERROR:    Exception in ASGI application",
    "Decode batch, nothing useful here",
    "KV Cache is allocated. but no token count",
    "Capture the flag",
    "The quick brown fox",
    "[not a timestamp] Load weight",
    "[2026-11-30 09:00:00 TP0]",
    "# a comment naming Decode batch and Capture cuda graph begin",
    "",
    "   ",
])
def test_benign_and_near_miss_lines_are_not_events(line):
    event = parse_line(line)
    assert event is None or isinstance(event, HttpRequest), event


def test_huge_line_is_handled_without_error():
    line = "[2026-11-30 09:00:00] Decode batch, #running-req: 1, " + "x" * 10_000_000
    assert parse_line(line) is None or isinstance(parse_line(line), DecodeBatch)
    assert parse_line("ValueError: " + "y" * 10_000_000).message.startswith("ValueError: yyy")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_line_never_raises(text):
    parse_line(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([c for c, _ in CASES] + [f for f, _ in FATALS] + ["\r", "\n", "\x1b[2K", "%|"]),
                max_size=12),
       st.text(max_size=40))
def test_parse_line_never_raises_on_mangled_log_text(parts, noise):
    text = "".join(parts)
    for cut in (text, text[: len(text) // 2], noise + text, text + noise):
        parse_line(cut)


# --- the line splitter -------------------------------------------------------------------

def test_splitter_splits_on_cr_and_lf_and_drops_empty_lines():
    assert split_lines("a\r\nb\rc\n\nd") == ["a", "b", "c", "d"]


def test_splitter_handles_bytes_split_inside_a_utf8_char_and_ansi():
    s = LineSplitter()
    data = "bar █▎ done\x1b[0m\n".encode()
    out = []
    for i in range(len(data)):
        out += s.feed(data[i:i + 1])
    assert out + s.flush() == ["bar █▎ done"]
    assert split_lines(b"\xff\xfeok\n") == ["\ufffd\ufffdok"]


def test_ten_megabyte_line_is_bounded():
    s = LineSplitter(max_len=1024)
    out = []
    for _ in range(10):
        out += s.feed("z" * 1_000_000)
        assert s._size <= 1024
    out += s.feed("\nnext\n")
    assert out == ["z" * 1024 + TRUNCATED_MARK, "next"]
    assert MAX_LINE >= 4096


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\r\n\x1b[m ", max_size=200), st.lists(st.integers(1, 30), max_size=20))
def test_splitter_gives_the_same_lines_whatever_the_chunking(text, cuts):
    whole = split_lines(text)
    s = LineSplitter()
    out, pos = [], 0
    for n in cuts:
        out += s.feed(text[pos:pos + n])
        pos += n
    out += s.feed(text[pos:]) + s.flush()
    assert out == whole


# --- golden files ---------------------------------------------------------------------------

GOLDEN = sorted(LOGS.glob("*.log"))


def test_there_are_enough_golden_logs():
    names = [p.name for p in GOLDEN]
    assert len([n for n in names if n.startswith("real_")]) >= 2
    for needed in ("dflash_0523_tp2.log", "dflash_0511.log", "oom_at_capture.log", "port_in_use.log"):
        assert needed in names
    for path in GOLDEN:
        if path.name.startswith("real_"):
            header = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("#")]
            assert any("https://github.com/sgl-project/" in ln for ln in header), path.name


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_summary(path):
    expected = json.loads(path.with_suffix(".inspect.json").read_text())
    for key in ("phases", "last_phase", "alarms", "deprecated"):  # what ddtune inspect adds to the summary
        expected.pop(key, None)
    assert summarize_file(path).to_json() == expected


CUT_DRAFT_LINE = (b"[2026-11-30 09:00:15 TP0] Initialized DFLASH draft runner. attention_backend=flashinfer, "
                  b"model=DFlashDraftModel, block_size=16, draft_window_size=2048, compact_cache=True\xe2\x80")


@pytest.mark.parametrize("tail", [b"", b"\n", b"\xe2\x80\n", b", extra=1\n"])
def test_compact_cache_true_survives_a_log_cut_mid_utf8(tmp_path, tail):
    """A log cut inside a multi-byte character leaves U+FFFD right after ``True``; the token still
    reads True (it used to compare the whole tail of the line and read False)."""
    (event,) = [parse_line(line) for line in split_lines(CUT_DRAFT_LINE + tail)]
    assert event == DraftRunner(2048, True, 16, "flashinfer", "DFlashDraftModel", ts="2026-11-30 09:00:15",
                                ranks=Ranks(tp=0))
    path = tmp_path / "cut.log"
    path.write_bytes(CUT_DRAFT_LINE + tail)
    draft = summarize_file(path).draft
    assert draft is not None and draft.window_size == 2048 and draft.compact_cache is True


async def test_tail_file_reads_the_cut_line_the_same(tmp_path):
    import asyncio

    from backends.drivers.base import tail_file

    path = tmp_path / "server.log"
    path.write_bytes(CUT_DRAFT_LINE + b"\n")
    agen = tail_file(path, from_start=True, poll=0.01)
    line = await asyncio.wait_for(agen.__anext__(), timeout=10)
    await agen.aclose()
    assert line.endswith("compact_cache=True\ufffd")
    assert parse_line(line).compact_cache is True


@pytest.mark.parametrize("value, want", [("True", True), ("False", False), ("False\ufffd", False),
                                          ("Truely", None), ("", None), ("\ufffd", None)])
def test_compact_cache_token(value, want):
    line = f"Initialized DFLASH draft runner. block_size=16, draft_window_size=None, compact_cache={value}"
    # no token: fall back to "a window was set" (here: none)
    assert parse_line(line).compact_cache is (want if want is not None else False)

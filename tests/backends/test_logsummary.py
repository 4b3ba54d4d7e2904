"""The fold from events to the inspect summary: rank de-duplication, fallbacks, fatal choice."""

from __future__ import annotations

from backends.logs.summary import summarize

T = "[2026-11-30 09:00:0{}{}] "


def line(sec: int, msg: str, ranks: str = "") -> str:
    return T.format(sec, ranks) + msg


def test_weight_elapsed_falls_back_to_timestamps_and_ranks_count_once():
    s = summarize([
        line(0, "Load weight begin. avail mem=80.00 GB", " TP0"),
        line(0, "Load weight begin. avail mem=80.00 GB", " TP1"),
        line(7, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.00 GB", " TP1"),
        line(7, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.00 GB", " TP0"),
        line(8, "KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB", " TP1"),
        line(8, "KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB", " TP0"),
    ]).to_json()
    assert s["weights"] == [{"elapsed_s": 7.0, "type": "LlamaForCausalLM", "mem_usage_gb": None}]
    assert s["kv_cache_tokens"] == [1000]


def test_capture_end_without_begin_is_still_listed():
    s = summarize([line(1, "Capture cuda graph end. Time elapsed: 3.50 s. mem usage=0.1 GB. avail mem=1 GB.")])
    assert s.to_json()["cuda_graph"] == [{"name": "default", "elapsed_s": 3.5}]


def test_bare_exception_after_ready_is_not_fatal_but_before_ready_is():
    after = summarize([line(1, "The server is fired up and ready to roll!"), "ValueError: bad request body"])
    assert after.ready and after.fatal is None
    before = summarize(["ValueError: --speculative-draft-window-size must be positive, got 0."])
    assert before.to_json()["fatal"] == {
        "kind": "other", "message": "ValueError: --speculative-draft-window-size must be positive, got 0."}


def test_fatal_choice_prefers_the_root_cause():
    s = summarize([
        "KeyError: 'x'",
        line(1, "Scheduler hit an exception: Traceback (most recent call last):"),
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        line(2, "Rank 0 scheduler died during initialization (exit code: -9)."),
    ])
    assert s.fatal.kind == "oom"
    died = summarize(["KeyError: 'x'", line(2, "Rank 0 scheduler died during initialization (exit code: 1).")])
    assert died.fatal.kind == "scheduler_died"
    port = summarize([line(1, "ERROR:    [Errno 98] error while attempting to bind on address "
                              "('0.0.0.0', 30000): address already in use"),
                      line(2, "Received sigquit from a child process. It usually means the child failed.")])
    assert port.fatal.kind == "port_in_use"


def test_decode_stats_and_draft_and_pid():
    s = summarize([
        line(1, "INFO:     Started server process [99]"),
        line(1, "Initialized DFLASH draft runner. attention_backend=fa3, model=M, block_size=8, "
                "draft_window_size=1024, compact_cache=True", " TP0"),
        line(2, "Decode batch, #running-req: 4, #token: 10, token usage: 0.00, accept len: 2.00, accept rate: 0.10, "
                "cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0", " TP0"),
        line(3, "Decode batch, #running-req: 2, #token: 10, token usage: 0.00, cuda graph: True, "
                "gen throughput (token/s): 20.00, #queue-req: 0", " TP0"),
        line(4, "Decode batch, #running-req: 1, #token: 10, token usage: 0.00, accept len: 3.00, accept rate: 0.20, "
                "cuda graph: True, gen throughput (token/s): 30.00, #queue-req: 0", " TP0"),
    ]).to_json()
    assert s["server_pid"] == 99
    assert s["draft"] == {"window_size": 1024, "compact_cache": True, "block_size": 8}
    assert s["decode"] == {"lines": 3, "accept_len_mean": 2.5, "accept_len_last": 3.0,
                           "gen_throughput_last": 30.0, "running_req_max": 4}

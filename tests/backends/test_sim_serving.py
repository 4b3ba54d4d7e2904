"""The simulator serving over real sockets: completions, streaming, acceptance, reasoning, metrics."""

import json
import time

import httpx
import pytest

DFLASH = ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "demo-draft",
          "--speculative-draft-window-size", "2048")
FAST = ("--sim-step-ms", "1")


def sse(client: httpx.Client, url: str, body: dict, **kw) -> list:
    events = []
    with client.stream("POST", url, json=body, timeout=60, **kw) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                data = line[6:]
                events.append(data if data == "[DONE]" else json.loads(data))
    return events


@pytest.fixture
def dflash(start_sim):
    return start_sim(*DFLASH, *FAST, "--decode-log-interval", "5", "--enable-metrics")


def test_generate_non_streaming_has_acceptance(dflash):
    r = httpx.post(dflash.url + "/generate", json={"text": "x" * 400, "sampling_params": {"max_new_tokens": 64}},
                   timeout=60)
    assert r.status_code == 200
    meta = r.json()["meta_info"]
    assert meta["prompt_tokens"] == 100
    assert meta["completion_tokens"] == 64
    assert meta["finish_reason"] == {"type": "length", "length": 64}
    assert 1 <= meta["spec_verify_ct"] < 64
    assert meta["spec_accept_length"] == pytest.approx(64 / meta["spec_verify_ct"], rel=1e-3)
    assert 0 < meta["spec_accept_rate"] <= 1
    assert meta["e2e_latency"] > 0
    assert len(r.json()["output_ids"]) == 64


def test_generate_streaming_cumulative_text_and_final_meta(dflash):
    with httpx.Client() as c:
        events = sse(c, dflash.url + "/generate",
                     {"text": "hello", "stream": True, "sampling_params": {"max_new_tokens": 40}})
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert len(chunks) >= 2
    texts = [e["text"] for e in chunks]
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))
    assert "spec_verify_ct" not in chunks[0]["meta_info"]
    last = chunks[-1]["meta_info"]
    assert last["completion_tokens"] == 40 and last["spec_verify_ct"] >= 1


def test_same_prompt_is_deterministic_across_servers(start_sim):
    a = start_sim(*DFLASH, *FAST)
    b = start_sim(*DFLASH, "--sim-step-ms", "0")
    body = {"text": "Write fib please", "sampling_params": {"max_new_tokens": 80}}
    ra = httpx.post(a.url + "/generate", json=body, timeout=60).json()
    rb = httpx.post(b.url + "/generate", json=body, timeout=60).json()
    assert ra["text"] == rb["text"]
    assert ra["meta_info"]["spec_verify_ct"] == rb["meta_info"]["spec_verify_ct"]


def test_chat_streaming_with_spec_details_and_usage(dflash):
    body = {"model": "demo", "messages": [{"role": "user", "content": "Write `fib(n: int) -> int`."}],
            "stream": True, "return_spec_tokens_details": True, "stream_options": {"include_usage": True}}
    with httpx.Client() as c:
        events = sse(c, dflash.url + "/v1/chat/completions", body)
    assert events[-1] == "[DONE]"
    first, *mid, fin, usage = events[:-1]
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert all(e["object"] == "chat.completion.chunk" for e in mid)
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in mid)
    assert text.startswith("<think>") and "</think>" in text  # no reasoning parser: think stays in content
    assert text.count("```python") >= 2
    assert fin["choices"][0]["finish_reason"] == "stop"
    details = fin["sglext"]["spec_tokens_details"]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0
    tokens = usage["usage"]["completion_tokens"]
    assert details["spec_accept_length"] == pytest.approx(tokens / details["spec_verify_ct"], rel=1e-3)
    # several tokens per chunk: speculative decoding streams accepted runs
    assert len(mid) < usage["usage"]["completion_tokens"]


def test_chat_non_streaming_truncated_at_max_tokens(dflash):
    r = httpx.post(dflash.url + "/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "Write fib"}], "max_tokens": 20})
    out = r.json()
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 20
    assert out["choices"][0]["message"]["reasoning_content"] is None
    assert "sglext" not in out


def test_reasoning_parser_separates_thinking(start_sim):
    sim = start_sim(*DFLASH, *FAST, "--reasoning-parser", "qwen3")
    msg = [{"role": "user", "content": "Write `fib`"}]
    full = httpx.post(sim.url + "/v1/chat/completions", json={"messages": msg}, timeout=60).json()
    m = full["choices"][0]["message"]
    assert "<think>" not in m["content"] and "</think>" not in m["content"]
    assert "```python" in m["reasoning_content"] and m["content"].rstrip().endswith("linear time.")
    cut = httpx.post(sim.url + "/v1/chat/completions", json={"messages": msg, "max_tokens": 15}, timeout=60).json()
    assert cut["choices"][0]["message"]["content"] == ""
    assert cut["choices"][0]["message"]["reasoning_content"]
    with httpx.Client() as c:
        events = sse(c, sim.url + "/v1/chat/completions", {"messages": msg, "stream": True})
    deltas = [e["choices"][0]["delta"] for e in events[:-1] if e["choices"]]
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    content = "".join(d.get("content") or "" for d in deltas)
    assert reasoning == m["reasoning_content"] and content == m["content"]
    off = httpx.post(sim.url + "/v1/chat/completions", timeout=60, json={
        "messages": msg, "separate_reasoning": False}).json()["choices"][0]["message"]
    assert off["content"].startswith("<think>")
    nothink = httpx.post(sim.url + "/v1/chat/completions", timeout=60, json={
        "messages": msg, "chat_template_kwargs": {"enable_thinking": False}}).json()["choices"][0]["message"]
    assert nothink["reasoning_content"] == "" and nothink["content"].startswith("Here is")


def test_plain_server_sends_no_speculative_fields(start_sim):
    """As SGLang: the spec_* fields (meta_info, sglext.spec_tokens_details) exist only when a
    speculative algorithm is set, even when the request asks for them."""
    sim = start_sim(*FAST)
    meta = httpx.post(sim.url + "/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 30}},
                      timeout=60).json()["meta_info"]
    assert meta["completion_tokens"] == 30 and not [k for k in meta if k.startswith("spec_")]
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 20, "return_spec_tokens_details": True}
    assert "sglext" not in httpx.post(sim.url + "/v1/chat/completions", json=body, timeout=60).json()
    with httpx.Client() as client:
        events = sse(client, sim.url + "/v1/chat/completions", {**body, "stream": True})
    assert not [e for e in events if isinstance(e, dict) and "sglext" in e]
    assert httpx.get(sim.url + "/server_info", timeout=30).json()["speculative_algorithm"] is None
    assert "Initialized DFLASH" not in sim.text()


def test_continuous_usage_counts_the_tokens_of_every_chunk(dflash):
    """stream_options.continuous_usage_stats: each content chunk carries the cumulative usage, so a
    client can tell how many tokens a verify step brought (several, under speculation)."""
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 60, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    with httpx.Client() as client:
        events = [e for e in sse(client, dflash.url + "/v1/chat/completions", body) if isinstance(e, dict)]
    content = [e for e in events if e["choices"] and e["choices"][0]["delta"].get("content")]
    counts = [e["usage"]["completion_tokens"] for e in content]
    assert counts == sorted(counts) and counts[-1] == 60
    steps = [b - a for a, b in zip([0] + counts, counts, strict=False)]
    assert max(steps) > 1 and len(content) < 60  # several tokens per verify step
    plain = {**body, "stream_options": {"include_usage": True}}
    with httpx.Client() as client:
        events = [e for e in sse(client, dflash.url + "/v1/chat/completions", plain) if isinstance(e, dict)]
    # no "usage" key at all on a chunk without continuous_usage_stats (real 0.5.17: http/chat_stream_specdetails.sse)
    assert all("usage" not in e for e in events if e["choices"])


def test_decode_lines_metrics_server_info(dflash):
    httpx.post(dflash.url + "/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 200,
                                                                                  "ignore_eos": True}}, timeout=60)
    text = dflash.wait_for("Decode batch")
    line = next(ln for ln in text.splitlines() if "Decode batch" in ln)
    assert "accept len: " in line and "accept rate: " in line and line.rstrip().endswith("#queue-req: 0")
    assert "Prefill batch, #new-seq: 1, #new-token: 1," in text
    metrics = httpx.get(dflash.url + "/metrics", timeout=30).text
    assert 'sglang:generation_tokens_total{engine_type="unified",is_streaming="false",model_name="demo"}' in metrics
    assert "sglang:spec_verify_calls_total" in metrics and "sglang:spec_accept_length" in metrics
    info = httpx.get(dflash.url + "/server_info", timeout=30).json()
    assert info["version"] == "0.5.23" and "--speculative-draft-window-size" in info["launch_command"]
    assert info["internal_states"][0]["avg_spec_accept_length"] > 1
    assert httpx.post(dflash.url + "/flush_cache", timeout=30).status_code == 200
    info = httpx.get(dflash.url + "/server_info", timeout=30).json()
    # reset by the flush: SGLang then leaves the key out (get_internal_state: no verify step counted yet)
    assert not info["internal_states"][0].get("avg_spec_accept_length")


def test_metrics_off_by_default_and_api_key(start_sim):
    sim = start_sim(*FAST, "--api-key", "s3cret")
    assert httpx.get(sim.url + "/metrics", timeout=30).status_code == 404
    assert httpx.get(sim.url + "/v1/models", timeout=30).status_code == 401
    ok = httpx.get(sim.url + "/v1/models", headers={"Authorization": "Bearer s3cret"}, timeout=30)
    assert ok.status_code == 200 and ok.json()["data"][0]["id"] == "demo"
    assert httpx.get(sim.url + "/health", timeout=30).status_code == 200


def test_abort_all_ends_stream(start_sim):
    sim = start_sim("--sim-step-ms", "20")
    with httpx.Client() as c:
        with c.stream("POST", sim.url + "/generate", timeout=60, json={
                "text": "hi", "stream": True, "sampling_params": {"max_new_tokens": 100000, "ignore_eos": True}}) as r:
            lines = r.iter_lines()
            next(ln for ln in lines if ln.startswith("data: {"))
            assert httpx.post(sim.url + "/abort_request", json={"abort_all": True}, timeout=30).status_code == 200
            rest = [ln for ln in lines if ln.startswith("data: ")]
    assert rest[-1] == "data: [DONE]"
    assert json.loads(rest[-2][6:])["meta_info"]["finish_reason"]["type"] == "abort"


def test_bad_requests(dflash):
    assert httpx.post(dflash.url + "/v1/chat/completions", content=b"{nope", timeout=30).status_code == 400
    r = httpx.post(dflash.url + "/v1/chat/completions", json={"messages": []}, timeout=30)
    assert r.status_code == 400 and "messages" in r.json()["message"]
    assert httpx.get(dflash.url + "/nope", timeout=30).status_code == 404


def test_client_disconnect_aborts_request(start_sim):
    sim = start_sim("--sim-step-ms", "5", "--enable-metrics")
    with httpx.Client() as c:
        with c.stream("POST", sim.url + "/v1/chat/completions", timeout=60, json={
                "messages": [{"role": "user", "content": "hi"}], "stream": True, "ignore_eos": True,
                "max_tokens": 30000}) as r:  # under the context: past it SGLang answers 400 (err_chat_toolong)
            next(ln for ln in r.iter_lines() if '"content"' in ln)
    # the server notices on its next writes and aborts; nothing keeps running
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if httpx.get(sim.url + "/v1/loads", timeout=30).json()["loads"][0]["num_running_reqs"] == 0:
            break
        time.sleep(0.05)
    # /v1/loads, as a real 0.5.17 answers it (internal_states has no "load" key there)
    assert httpx.get(sim.url + "/v1/loads", timeout=30).json()["loads"][0]["num_running_reqs"] == 0
    metrics = httpx.get(sim.url + "/metrics", timeout=30).text
    assert "sglang:inter_token_latency_seconds_count" in metrics
    assert "sglang:num_running_reqs{" in metrics

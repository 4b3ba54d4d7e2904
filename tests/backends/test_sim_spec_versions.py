"""Where a speculative simulator puts acceptance, by imitated release, as a real 0.5.17 server did
(shared/real-sglang/0.5.17/http: chat_*_specdetails, generate_*, get_metrics.txt; logs/*.log):
no spec field on chat before 0.5.19, ``meta_info`` on /generate, Prometheus counters with the
recorded label shapes, and ``Decode batch`` lines with ``accept len`` ending a burst on ``#token: 0``."""

import re

import httpx

from backends.logs.events import DecodeBatch
from backends.logs.parse import parse_line

DFLASH = ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "demo-draft")
CHAT = {"model": "default", "messages": [{"role": "user", "content": "say hi"}], "max_tokens": 64,
        "temperature": 0, "return_spec_tokens_details": True}
# the label sets of the real 0.5.17 server's counters (get_metrics.txt, metrics_after.txt)
RECORDED_LABELS = {
    "generation_tokens_total": ["engine_type", "is_streaming", "model_name"],
    "spec_verify_calls_total": ["engine_type", "model_name"],
    "spec_accept_length": ["engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"],
}
RECORDED_META = ("spec_verify_ct", "spec_accept_length", "spec_accept_rate", "spec_num_correct_drafts",
                 "spec_num_proposed_drafts", "spec_accepted_drafts", "spec_proposed_drafts",
                 "spec_correct_drafts_histogram", "spec_accept_histogram")


def series(text: str, name: str) -> list[tuple[list[str], float]]:
    out = []
    for m in re.finditer(rf"^sglang:{name}\{{([^}}]*)\}} (\S+)$", text, re.M):
        out.append(([kv.split("=", 1)[0] for kv in m[1].split(",")], float(m[2])))
    return out


def test_0517_chat_has_no_spec_fields_generate_and_counters_do(start_sim):
    sim = start_sim(*DFLASH, "--sim-version", "0.5.17", "--sim-step-ms", "0", "--enable-metrics")
    plain = httpx.post(sim.url + "/v1/chat/completions", json=CHAT, timeout=30)
    assert plain.status_code == 200 and "sglext" not in plain.json() and "spec_" not in plain.text
    with httpx.stream("POST", sim.url + "/v1/chat/completions", timeout=30,
                      json={**CHAT, "stream": True, "stream_options": {"include_usage": True}}) as r:
        body = r.read().decode()
    assert "data: [DONE]" in body and "sglext" not in body and "spec_" not in body
    gen = httpx.post(sim.url + "/generate", timeout=30,
                     json={"text": "say hi", "sampling_params": {"max_new_tokens": 64, "temperature": 0}}).json()
    meta = gen["meta_info"]
    assert all(k in meta for k in RECORDED_META), sorted(meta)
    assert meta["spec_accept_length"] == round(meta["completion_tokens"] / meta["spec_verify_ct"], 6)
    assert len(meta["spec_accept_histogram"]) == 16 and sum(meta["spec_accept_histogram"]) == meta["spec_verify_ct"]
    metrics = httpx.get(sim.url + "/metrics", timeout=30).text
    for name, labels in RECORDED_LABELS.items():
        found = series(metrics, name)
        assert found and all(keys == labels for keys, _ in found), (name, found)
    tokens = sum(v for _, v in series(metrics, "generation_tokens_total"))
    verify = sum(v for _, v in series(metrics, "spec_verify_calls_total"))
    assert len(series(metrics, "generation_tokens_total")) == 2  # is_streaming "false" and "true": both were sent
    # every token the three requests (and the warmup) produced, over every verify step they took
    assert tokens >= 3 * 64 and 1 < tokens / verify <= 16


def test_0523_chat_still_answers_spec_details(start_sim):
    sim = start_sim(*DFLASH, "--sim-step-ms", "0")
    out = httpx.post(sim.url + "/v1/chat/completions", json=CHAT, timeout=30).json()
    assert out["sglext"]["spec_tokens_details"]["spec_verify_ct"] >= 1


def test_burst_ends_on_an_idle_decode_line_with_accept_len(start_sim):
    """A burst shorter than the decode-log interval still logs one line at its end, as the real
    server's last line of each burst (#running-req: <its batch>, #token: 0, token usage: 0.00)."""
    sim = start_sim(*DFLASH, "--sim-version", "0.5.17", "--sim-step-ms", "1", "--decode-log-interval", "1000")
    for _ in range(2):
        httpx.post(sim.url + "/generate", timeout=30, json={"text": "go", "sampling_params": {
            "max_new_tokens": 60, "ignore_eos": True}})
    text = sim.wait_for("#token: 0,")
    decode = [e for e in map(parse_line, text.splitlines()) if isinstance(e, DecodeBatch)]
    assert len(decode) >= 2
    last = decode[-1]
    assert last.tokens == 0 and last.token_usage == 0 and last.running_req == 1
    assert last.accept_len is not None and last.accept_len > 1 and last.gen_throughput and last.gen_throughput > 0
    info = httpx.get(sim.url + "/server_info", timeout=30).json()
    assert info["version"] == "0.5.17"
    assert "server_args=ServerArgs(" in text  # the 0.5.17 dump, as recorded (a dict from 0.5.20)

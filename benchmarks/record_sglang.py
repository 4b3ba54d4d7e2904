"""Record what a running SGLang server answers, raw, for the simulator's conformance suite
(tests/backends/test_sim_conformance.py replays every file it writes).

    python3 benchmarks/record_sglang.py URL OUTDIR

Each file starts with ``# METHOD /path -> status`` and ``# headers: {...}`` (a POST also with
``# body: {...}``); streamed answers are one line per SSE line, prefixed by the seconds since the
request began and a tab. Files are named as in tests/data/real/0.5.17/http. Bounded: a fixed set
of requests, each with a timeout, one load of 8 x 256 tokens (the counters before and after it).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

GETS = ("/health", "/health_generate", "/server_info", "/get_server_info", "/model_info", "/get_model_info",
        "/v1/models", "/metrics", "/v1/loads", "/v1/loads?include=spec", "/ping", "/ready", "/flush_cache")
MSGS = [{"role": "user", "content": "Write a Python function fib(n)."}]
CHAT = {"model": "default", "messages": MSGS, "max_tokens": 64, "temperature": 0}
USAGE = {"include_usage": True, "continuous_usage_stats": True}
STREAMS = {
    "generate_stream.sse": ("/generate", {"text": "def add(a, b):", "stream": True,
                                          "sampling_params": {"max_new_tokens": 64, "temperature": 0}}),
    "chat_stream_usage.sse": ("/v1/chat/completions", {**CHAT, "stream": True, "stream_options": USAGE}),
    "chat_stream_specdetails.sse": ("/v1/chat/completions", {**CHAT, "stream": True, "return_spec_tokens_details": True,
                                                             "stream_options": {"include_usage": True}}),
    "completions_stream.sse": ("/v1/completions", {"model": "default", "prompt": "def add(a, b):", "max_tokens": 32,
                                                   "temperature": 0, "stream": True, "stream_options": USAGE}),
}
POSTS = {
    "generate_nostream.json": ("/generate", {"text": "def add(a, b):",
                                             "sampling_params": {"max_new_tokens": 64, "temperature": 0}}),
    "chat_nostream_specdetails.json": ("/v1/chat/completions", {**CHAT, "return_spec_tokens_details": True}),
    "chat_nostream.json": ("/v1/chat/completions", CHAT),
    "err_chat_badjson.txt": ("/v1/chat/completions", b"{not json"),
    "err_chat_toolong.txt": ("/v1/chat/completions", {**CHAT, "max_tokens": 10**7}),
    "err_chat_nomessages.txt": ("/v1/chat/completions", {"model": "default", "max_tokens": 8}),
    "err_generate_neg.txt": ("/generate", {"text": "x", "sampling_params": {"max_new_tokens": -5}}),
    "err_chat_model.txt": ("/v1/chat/completions", {**CHAT, "model": "no-such-model", "max_tokens": 8}),
}


def head(r: httpx.Response, body: object = None) -> str:
    lines = [f"# {r.request.method} {r.request.url.path} -> {r.status_code}"]  # the query: in the file name
    if isinstance(body, dict):
        lines.append(f"# body: {json.dumps(body)}")
    lines.append(f"# headers: {dict(r.headers)}")
    return "\n".join(lines) + "\n"


def file_name(path: str) -> str:
    return "get_" + path.strip("/").replace("/", "_").replace("?", "_q_").replace("=", "-") + ".txt"


def post(client: httpx.Client, path: str, body: object) -> httpx.Response:
    if isinstance(body, bytes):
        return client.post(path, content=body, headers={"content-type": "application/json"})
    return client.post(path, json=body)


@contextlib.contextmanager
def noted(out: Path, name: str) -> Iterator[None]:
    """A request that fails on the wire is written as NAME.error (its exception), and the rest goes on."""
    try:
        yield
    except httpx.HTTPError as exc:
        (out / f"{name}.error").write_text(repr(exc) + "\n")


def record(url: str, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with httpx.Client(base_url=url, timeout=60.0) as client:
        for path in GETS:
            with noted(out, file_name(path)):
                r = client.get(path)
                (out / file_name(path)).write_text(head(r) + r.text)
        for name, (path, body) in POSTS.items():
            with noted(out, name):
                r = post(client, path, body)
                (out / name).write_text(head(r, body) + r.text)
        for name, (path, body) in STREAMS.items():
            with noted(out, name):
                t0 = time.monotonic()
                with client.stream("POST", path, json=body) as r:
                    lines = [f"{time.monotonic() - t0:.4f}\t{line}" for line in r.iter_lines()]
                (out / name).write_text(head(r, body) + "\n".join(lines) + "\n")
        before = client.get("/metrics").text

        def one(i: int) -> dict:
            return client.post("/generate", json={"text": f"def f{i}(x):", "sampling_params": {
                "max_new_tokens": 256, "temperature": 0, "ignore_eos": True}}).json()

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(one, range(8)))
        (out / "generate_8x256.json").write_text(json.dumps(answers, indent=1))
        time.sleep(1.5)  # the metrics of the last decode tick
        (out / "metrics_before.txt").write_text(before)
        (out / "metrics_after.txt").write_text(client.get("/metrics").text)
    return len(list(out.iterdir()))


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: record_sglang.py URL OUTDIR", file=sys.stderr)
        return 2
    print(f"recorded {record(sys.argv[1], Path(sys.argv[2]))} files in {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

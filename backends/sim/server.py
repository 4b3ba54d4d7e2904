"""The simulator's HTTP routes: SGLang's endpoints, auth, readiness states and Prometheus metrics."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

from backends.sim.answers import count_prompt_tokens
from backends.sim.flags import release
from backends.sim.completions import BadRequest, Completions, GenerateError, ValidationError, validation_message
from backends.sim.engine import KV_TOKENS, Engine
from backends.sim.http import Request, Response
from backends.sim.logwriter import LogWriter

# the first release whose /server_info carries launch_command (absent in the 0.5.17 recording and the
# 0.5.19 wheel's http_server.py; built in by 0.5.23's build_server_info)
LAUNCH_COMMAND_FROM = (0, 5, 20)
# /model_info's "embedding" block of a (generation) model, as a real 0.5.17 answered (http/get_model_info.txt)
EMBEDDING = {"family": "none", "task": "none", "execution": "none", "attention": "none", "pooling": "model_defined",
             "normalize": False, "postprocessor": "none", "tokenizer_special_tokens": "model_default",
             "supports_dimensions": False, "supports_token_embeddings": False, "supports_multimodal": False,
             "requires_embedding_flag": False, "auto_enable_embedding": False, "bcg_eligibility": "disabled",
             "safe_disable_kv_cache": False, "safe_disable_radix_cache": False, "safe_disable_chunked_prefill": False,
             "enabled": False, "matryoshka_dimensions": [],
             "bcg": {"prefill_backend": "disabled", "enabled": False, "capture_token_budget": 8192,
                     "capture_batch_sizes": [4, 8, 16, 32]},
             "cache": {"kv_cache_disabled": False, "radix_cache_disabled": False, "chunked_prefill_disabled": False}}
OPEN_PATHS = ("/health", "/metrics")   # SGLang's API-key middleware lets these through


class SimServer:
    """State: 'starting' (bound, warmup running), 'ready', 'draining' (after SIGTERM)."""

    def __init__(self, args, engine: Engine, completions: Completions, log: LogWriter) -> None:
        self.args = args
        self.engine = engine
        self.completions = completions
        self.log = log
        self.state = "starting"
        self.started = time.time()
        self.routes = {
            "/health": self.health, "/health_generate": self.health, "/ready": self.ready,
            "/model_info": self.model_info, "/get_model_info": self.model_info, "/v1/models": self.models,
            "/server_info": self.server_info, "/get_server_info": self.server_info,
            "/generate": self.generate, "/v1/chat/completions": self.chat, "/metrics": self.metrics,
            "/flush_cache": self.flush_cache, "/abort_request": self.abort_request,
            "/v1/completions": self.text_completion, "/ping": self.ping, "/v1/loads": self.loads,
            "/tokenize": self.tokenize, "/v1/tokenize": self.tokenize,
        }

    async def handle(self, req: Request, resp: Response) -> None:
        route = self.routes.get(req.path)
        hostile = self.args.hostile or ""
        if self.args.api_key and req.method != "OPTIONS" and not req.path.startswith(OPEN_PATHS):
            if req.headers.get("authorization", "") != f"Bearer {self.args.api_key}":
                resp.send_json(401, {"error": "Unauthorized" + hostile})
                self.log.access(req.peer, req.method, req.path, 401)
                return
        if route is None or (req.path == "/ready" and release(self.args.version) < (0, 5, 20)) or \
                (req.path == "/metrics" and not self.args.enable_metrics) or \
                (req.path.endswith("/tokenize") and self.args.no_tokenize):
            resp.send_json(404, {"detail": "Not Found" + hostile})
        else:
            try:
                await route(req, resp)
            except BadRequest as exc:
                resp.send_json(400, {"object": "error", "message": str(exc) + hostile, "type": exc.kind,
                                     "param": None, "code": 400})
            except GenerateError as exc:  # native routes: {"error": {"message"}} (http/err_generate_neg.txt)
                resp.send_json(400, {"error": {"message": str(exc) + hostile}})
            except json.JSONDecodeError as exc:
                if not req.path.startswith("/v1/"):
                    resp.send_json(400, {"error": {"message": f"invalid JSON body: {exc}"}})
                else:  # FastAPI's validation error, passed on as SGLang 0.5.17 does (http/err_chat_badjson.txt)
                    resp.send_json(400, {"object": "error", "message": validation_message(req.path, [
                        {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error", "input": {},
                         "ctx": {"error": exc.msg}}]), "type": ValidationError.kind, "param": None, "code": 400})
        self.log.access(req.peer, req.method, req.path + (f"?{req.query}" if req.query else ""), resp.status)

    # ---- readiness ------------------------------------------------------------------------
    async def health(self, req: Request, resp: Response) -> None:
        if self.state != "ready":
            resp.send(503, b"")
            return
        r = self.completions.make_request("health", 1, 1, False, True, 0)
        await self.engine.submit(r)
        resp.send(200, b"")

    async def ping(self, req: Request, resp: Response) -> None:
        resp.send(200, b"", "text/plain; charset=utf-8")

    async def ready(self, req: Request, resp: Response) -> None:
        if self.state == "ready":
            resp.send_json(200, {"status": "ready"})
        else:
            resp.send_json(503, {"status": self.state})

    # ---- info -----------------------------------------------------------------------------
    async def model_info(self, req: Request, resp: Response) -> None:
        resp.send_json(200, {"model_path": self.args.model_path, "tokenizer_path": self.args.model_path,
                             "is_generation": True, "preferred_sampling_params": None, "weight_version": "default",
                             "has_image_understanding": False, "has_audio_understanding": False,
                             "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
                             **({"embedding": EMBEDDING} if self.args.version == "0.5.17" else {})})

    async def models(self, req: Request, resp: Response) -> None:
        name = self.args.served_model_name
        resp.send_json(200, {"object": "list", "data": [
            {"id": name, "object": "model", "created": int(self.started), "owned_by": "sglang", "root": name,
             "parent": None, "max_model_len": self.args.context_length}]})

    async def server_info(self, req: Request, resp: Response) -> None:
        e, a = self.engine, self.args
        info = dict(a.server_args)
        if release(a.version) >= LAUNCH_COMMAND_FROM:
            info["launch_command"] = shlex.join(getattr(sys, "orig_argv", sys.argv))
        # the simulator's own (SGLang has no such key): which GPUs its launcher gave it
        info["sim_cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
        state: dict[str, object] = {"last_gen_throughput": round(e.last_gen_throughput, 3),
                                    "effective_max_running_requests_per_dp": a.max_running_requests}
        # only once a verify step ran (scheduler get_internal_state: spec_total_num_forward_ct > 0)
        if a.speculative and e.total_verify:
            state["avg_spec_accept_length"] = round(e.avg_accept_length, 6)
        info.update({"status": "ready" if self.state == "ready" else "starting",
                     "max_total_num_tokens": KV_TOKENS, "max_req_input_len": a.context_length - 6,
                     "startup_time": {"load_weight": 0.24, "kv_cache_allocation": 1.71, "scheduler_e2e": 11.98,
                                      "cuda_graph": {"prefill": 0.0, "decode": 0.0, "target_verify": 3.56,
                                                     "draft_prefill": 0.0, "draft_decode": 2.41, "draft_extend": 0.0},
                                      "tokenizer_e2e": 40.04},
                     "internal_states": [{**a.server_args, **state}],
                     "version": a.version + (a.hostile or "")})
        info["kv_events"] = None
        resp.send(200, json.dumps(info, default=str))

    async def loads(self, req: Request, resp: Response) -> None:
        """``/v1/loads`` (``?include=spec`` leaves out memory, disaggregation and queues), as recorded."""
        e, a = self.engine, self.args
        load: dict[str, object] = {
            "timestamp": time.time(), "dp_rank": 0, "num_running_reqs": len(e.running),
            "num_waiting_reqs": len(e.waiting), "num_waiting_uncached_tokens": 0,
            "num_used_tokens": sum(r.context for r in e.running), "num_total_tokens": 0, "num_active_tokens": 0,
            "max_total_num_tokens": KV_TOKENS, "max_running_requests": a.max_running_requests,
            "token_usage": 0.0, "gen_throughput": round(e.last_gen_throughput, 3), "cache_hit_rate": 0.0,
            "utilization": 0.0, "total_prefill_uncached_tokens": sum(e.counted_prompt.values()),
            "total_prefill_busy_us": 0, "decode_moments": [1.0, 1.0, 0.0, 1.0, 0.0, float(a.block_size)]}
        if "include=" not in req.query:
            load.update(memory={"weight_gb": 15.4, "kv_cache_gb": 97.26, "graph_gb": 1.62,
                                "token_capacity": KV_TOKENS},
                        disaggregation={"mode": "null", "prefill_bootstrap_queue_reqs": 0,
                                        "prefill_inflight_queue_reqs": 0, "decode_prealloc_queue_reqs": 0,
                                        "decode_transfer_queue_reqs": 0, "decode_retracted_queue_reqs": 0,
                                        "kv_transfer_speed_gb_s": 0.0, "kv_transfer_latency_ms": 0.0},
                        queues={"waiting": len(e.waiting), "grammar": 0, "paused": 0, "retracted": 0,
                                "prealloc_ready": 0})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".000000+00:00"
        resp.send_json(200, {"timestamp": stamp, "version": a.version, "accelerator": "NVIDIA H200",
                             "num_accelerators": 1, "loads": [load]})

    async def tokenize(self, req: Request, resp: Response) -> None:
        """``/tokenize``: ``{"prompt": str | [str], "add_special_tokens"}`` -> ``{"tokens", "count",
        "max_model_len"}`` (sglang's serving_tokenize.py), by the simulator's token rule (answers.py)."""
        if req.method != "POST":
            resp.send_json(405, {"detail": "Method Not Allowed"})
            return
        body = req.json()
        prompt = body.get("prompt") if isinstance(body, dict) else None
        texts = [prompt] if isinstance(prompt, str) else prompt
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise BadRequest(f"Invalid prompt type: {type(prompt)}. Expected str or List[str].")
        counts = [count_prompt_tokens(t) if t else 0 for t in texts]
        ids = [list(range(1000, 1000 + n)) for n in counts]
        resp.send_json(200, {"tokens": ids[0] if isinstance(prompt, str) else ids,
                             "count": counts[0] if isinstance(prompt, str) else counts,
                             "max_model_len": self.args.context_length})

    # ---- generation -----------------------------------------------------------------------
    async def generate(self, req: Request, resp: Response) -> None:
        if req.method != "POST" and req.method != "PUT":
            resp.send_json(405, {"detail": "Method Not Allowed"})
            return
        try:
            await self.completions.generate(req, resp)
        except BadRequest as exc:  # a native route: SGLang's {"error": {"message"}} shape, not OpenAI's
            raise GenerateError(str(exc)) from None

    async def chat(self, req: Request, resp: Response) -> None:
        if req.method != "POST":
            resp.send_json(405, {"detail": "Method Not Allowed"})
            return
        await self.completions.chat(req, resp)

    async def text_completion(self, req: Request, resp: Response) -> None:
        if req.method != "POST":
            resp.send_json(405, {"detail": "Method Not Allowed"})
            return
        await self.completions.completion(req, resp)

    async def flush_cache(self, req: Request, resp: Response) -> None:
        ok = self.engine.flush_cache()
        body = ("Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting "
                "requests, the operation will not be performed.)\n")
        resp.send(200 if ok else 400, body, "text/plain; charset=utf-8")

    async def abort_request(self, req: Request, resp: Response) -> None:
        body = req.json() if req.body else {}
        if body.get("abort_all"):
            self.engine.abort(None)
        elif body.get("rid"):
            self.engine.abort(body["rid"])
        resp.send(200, b"")

    # ---- metrics --------------------------------------------------------------------------
    async def metrics(self, req: Request, resp: Response) -> None:
        """Prometheus text with the label shapes a real 0.5.17 server used (shared/real-sglang):
        gauges per rank, token and request counters split by ``is_streaming``, verify calls not."""
        e = self.engine
        model = f'engine_type="unified",model_name="{self.args.served_model_name}"'
        ranked = f'{model},moe_ep_rank="0",pp_rank="0",tp_rank="0"'
        accept_len = (e.total_tokens / e.total_verify) if e.total_verify else (0.0 if self.args.speculative else 1.0)
        accept_rate = e.total_correct / e.total_proposed if e.total_proposed else 0.0
        lines = []

        def head(name: str, kind: str, helptext: str) -> None:
            lines.append(f"# HELP sglang:{name} {helptext}")
            lines.append(f"# TYPE sglang:{name} {kind}")

        def gauge(name: str, helptext: str, value) -> None:
            head(name, "gauge", helptext)
            lines.append(f"sglang:{name}{{{ranked}}} {float(value)}")

        def by_stream(name: str, helptext: str, values: dict[bool, int]) -> None:
            head(name, "counter", helptext)
            for streaming in (False, True):
                if values[streaming] or not streaming:  # a series appears once it was first counted
                    lines.append(f'sglang:{name}{{engine_type="unified",is_streaming="{str(streaming).lower()}",'
                                 f'model_name="{self.args.served_model_name}"}} {float(values[streaming])}')

        gauge("num_running_reqs", "The number of running requests.", len(e.running))
        gauge("num_queue_reqs", "The number of requests in the waiting queue.", len(e.waiting))
        gauge("gen_throughput", "The generation throughput (token/s).", e.last_gen_throughput)
        gauge("token_usage", "The token usage.", sum(r.context for r in e.running) / 708_314)
        gauge("spec_accept_length", "Mean acceptance length of speculative decoding (accepted drafts + bonus "
              "token per forward).", accept_len)
        gauge("spec_accept_rate", "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
              accept_rate)
        by_stream("prompt_tokens_total", "Number of prefill tokens processed.", e.counted_prompt)
        by_stream("generation_tokens_total", "Number of generation tokens processed.", e.counted_tokens)
        if not self.args.no_spec_fields:
            head("spec_verify_calls_total", "counter", "Number of speculative decoding verification calls.")
            lines.append(f"sglang:spec_verify_calls_total{{{model}}} {float(e.counted_verify)}")
        by_stream("num_requests_total", "Number of requests processed.", e.counted_requests)

        def histogram(name: str, helptext: str, samples, buckets) -> None:
            """samples: (value, weight, is_streaming); one series per is_streaming seen, as recorded."""
            head(name, "histogram", helptext)
            for streaming in sorted({s for _, _, s in samples}):
                mine = [(v, w) for v, w, s in samples if s == streaming]
                labels = f'engine_type="unified",is_streaming="{str(streaming).lower()}"'
                name_label = f'model_name="{self.args.served_model_name}"'
                total = sum(w for _, w in mine)
                lines.append(f"sglang:{name}_sum{{{labels},{name_label}}} {float(sum(v * w for v, w in mine))}")
                for b in [*buckets, "+Inf"]:
                    n = total if b == "+Inf" else sum(w for v, w in mine if v <= b)
                    lines.append(f'sglang:{name}_bucket{{{labels},le="{b}",{name_label}}} {float(n)}')
                lines.append(f"sglang:{name}_count{{{labels},{name_label}}} {float(total)}")

        histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                  [(t, 1, s) for t, s in zip(e.ttfts, e.ttft_streaming, strict=False)],
                  [0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0])
        if release(self.args.version) >= LAUNCH_COMMAND_FROM:
            # no inter-token series in the 0.5.17 recording, streamed requests or not; kept for the newer
            # releases the simulator imitates without a recording (see the test data notes)
            histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                      [(v, w, True) for v, w in e.itls], [0.002, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5])
        resp.send(200, "\n".join(lines) + "\n", "text/plain; version=0.0.4; charset=utf-8")

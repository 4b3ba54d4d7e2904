"""The simulator's HTTP routes: SGLang's endpoints, auth, readiness states and Prometheus metrics."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

from backends.sim.completions import BadRequest, Completions
from backends.sim.engine import Engine
from backends.sim.http import Request, Response
from backends.sim.logwriter import LogWriter

VERSION = {"0.5.23": "0.5.23", "0.5.17": "0.5.17", "0.5.11": "0.5.11"}
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
        }

    async def handle(self, req: Request, resp: Response) -> None:
        route = self.routes.get(req.path)
        hostile = self.args.hostile or ""
        if self.args.api_key and req.method != "OPTIONS" and not req.path.startswith(OPEN_PATHS):
            if req.headers.get("authorization", "") != f"Bearer {self.args.api_key}":
                resp.send_json(401, {"error": "Unauthorized" + hostile})
                self.log.access(req.peer, req.method, req.path, 401)
                return
        if route is None or (req.path == "/ready" and self.args.version == "0.5.11") or \
                (req.path == "/metrics" and not self.args.enable_metrics):
            resp.send_json(404, {"detail": "Not Found" + hostile})
        else:
            try:
                await route(req, resp)
            except BadRequest as exc:
                resp.send_json(400, {"object": "error", "message": str(exc) + hostile, "type": "BadRequestError",
                                     "param": None, "code": 400})
            except json.JSONDecodeError as exc:
                resp.send_json(400, {"object": "error", "message": f"invalid JSON body: {exc}",
                                     "type": "BadRequestError", "param": None, "code": 400})
        self.log.access(req.peer, req.method, req.path + (f"?{req.query}" if req.query else ""), resp.status)

    # ---- readiness ------------------------------------------------------------------------
    async def health(self, req: Request, resp: Response) -> None:
        if self.state != "ready":
            resp.send(503, b"")
            return
        r = self.completions.make_request("health", 1, 1, False, True, 0)
        await self.engine.submit(r)
        resp.send(200, b"")

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
                             "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]})

    async def models(self, req: Request, resp: Response) -> None:
        name = self.args.served_model_name
        resp.send_json(200, {"object": "list", "data": [
            {"id": name, "object": "model", "created": int(self.started), "owned_by": "sglang", "root": name,
             "parent": None, "max_model_len": self.args.context_length}]})

    async def server_info(self, req: Request, resp: Response) -> None:
        e = self.engine
        info = dict(self.args.server_args)
        info.update({
            "launch_command": shlex.join(getattr(sys, "orig_argv", sys.argv)),
            "version": VERSION[self.args.version] + (self.args.hostile or ""),
            # the simulator's own (SGLang has no such key): which GPUs its launcher gave it
            "sim_cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "internal_states": [{"avg_spec_accept_length": round(e.avg_accept_length, 6) if self.args.speculative
                                 else None,
                                 "last_gen_throughput": round(e.last_gen_throughput, 3),
                                 "load": len(e.running) + len(e.waiting)}],
        })
        resp.send(200, json.dumps(info, default=str))

    # ---- generation -----------------------------------------------------------------------
    async def generate(self, req: Request, resp: Response) -> None:
        if req.method != "POST" and req.method != "PUT":
            resp.send_json(405, {"detail": "Method Not Allowed"})
            return
        await self.completions.generate(req, resp)

    async def chat(self, req: Request, resp: Response) -> None:
        if req.method != "POST":
            resp.send_json(405, {"detail": "Method Not Allowed"})
            return
        await self.completions.chat(req, resp)

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
            """samples: (value, weight) pairs."""
            head(name, "histogram", helptext)
            for b in buckets:
                n = sum(w for v, w in samples if v <= b)
                lines.append(f'sglang:{name}_bucket{{{model},le="{b}"}} {float(n)}')
            total = sum(w for _, w in samples)
            lines.append(f'sglang:{name}_bucket{{{model},le="+Inf"}} {float(total)}')
            lines.append(f"sglang:{name}_sum{{{model}}} {float(sum(v * w for v, w in samples))}")
            lines.append(f"sglang:{name}_count{{{model}}} {float(total)}")

        histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                  [(t, 1) for t in e.ttfts], [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
        # the simulator observes each request's mean gap between streamed chunks, weighted by its gap count
        histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                  list(e.itls), [0.002, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0])
        resp.send(200, "\n".join(lines) + "\n", "text/plain; version=0.0.4; charset=utf-8")

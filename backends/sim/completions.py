"""``/generate`` and ``/v1/chat/completions`` in SGLang's JSON shapes, streaming (SSE) and not."""

from __future__ import annotations

import json
import time
import zlib
from collections import Counter

from backends.sim import answers
from backends.sim.flags import release
from backends.sim.engine import Engine, SimRequest
from backends.sim.http import Request, Response

EOS_ID = 151645
_dumps = json.dumps


def render_chat(messages) -> str:
    """The prompt text a Qwen-style chat template would produce (used for prompt token counts)."""
    parts = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        role = m.get("role", "user") if isinstance(m, dict) else "user"
        parts.append(f"<|im_start|>{role}\n{content or ''}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


class BadRequest(Exception):
    """An OpenAI-route error: ``{"object": "error", "message", "type", "param", "code"}``."""

    kind = "BadRequestError"


class ValidationError(BadRequest):
    """A request body FastAPI's validation refused (bad JSON, a missing field): type "Bad Request"."""

    kind = "Bad Request"


class GenerateError(Exception):
    """A native /generate error: ``{"error": {"message": ...}}`` (recorded on 0.5.17)."""


def _ids(tokens) -> list[int]:
    return [zlib.crc32(t.encode()) % 151000 for t in tokens]


def validation_message(route: str, errors: list[dict]) -> str:
    """FastAPI's request-validation text as SGLang 0.5.17 passes it on (http/err_chat_*.txt)."""
    n = len(errors)
    listed = "\n".join(f"  {e!r}" for e in errors)
    return (f"{n} validation error{'s' if n != 1 else ''}:\n{listed}\n\n"
            f'  File "sglang/srt/entrypoints/http_server.py", in openai_v1_chat_completions\n'
            f"    POST {route} {errors!r}")


def _int_field(obj: dict, name: str, default):
    value = obj.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"{name} must be a non-negative integer, got {value!r}")
    return value


class Completions:
    def __init__(self, engine: Engine, problems, args) -> None:
        self.engine = engine
        self.problems = problems
        self.args = args
        self.seen: Counter[str] = Counter()
        self.filler = answers.filler_tokens()
        self.hostile: str = args.hostile or ""  # --sim-hostile: every answer starts with this text

    def received(self, route: str, body: dict) -> None:
        """--sim-request-log: what a generation request asked, one JSON line, as it arrived."""
        if not self.args.request_log:
            return
        keys = ("messages", "prompt", "text", "max_tokens", "max_completion_tokens", "ignore_eos", "temperature")
        record = {"route": route, "t": time.time(), **{k: body[k] for k in keys if k in body}}
        if isinstance(body.get("sampling_params"), dict):
            record["sampling_params"] = body["sampling_params"]
        with open(self.args.request_log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def make_request(self, prompt: str, prompt_tokens: int, max_new: int, ignore_eos: bool, thinking: bool,
                     seed, greedy: bool = False) -> SimRequest:
        """The request and its planned answer. Repeats of a prompt get other answers (as if sampled)
        unless ``greedy``: then the answer depends on the prompt alone, with or without speculation
        (except for the prompts ``--sim-diverge-rate`` makes a speculative server get wrong)."""
        salt = seed if isinstance(seed, int) else (0 if greedy else self.seen[prompt])
        self.seen[prompt] += 1
        rng = answers.request_rng(self.args.seed, prompt, salt)
        ans = answers.compose(self.problems, prompt, rng, self.args.wrong_rate, thinking)
        tokens, think_end = ans.tokens, ans.think_end
        at = answers.diverge(tokens, self.args.seed, prompt, self.args.diverge_rate, max_new) \
            if self.args.speculative else None
        if at is not None:
            tokens = (*tokens[:at], answers.DIVERGED, *tokens[at:])
            think_end += at < think_end
        return SimRequest(prompt_tokens=prompt_tokens, tokens=tokens, think_end=think_end,
                          max_new_tokens=max_new, rng=rng, filler=self.filler if ignore_eos else ())

    def spec_fields(self, r: SimRequest) -> dict:
        """The ``spec_*`` fields of a finished request. Only a speculative server sends them: SGLang
        fills them in (``_calculate_spec_decoding_metrics``) only when ``speculative_algorithm`` is set."""
        rel = release(self.args.version)
        old = rel < (0, 5, 12)   # 0.5.11 named the draft counters differently
        fields: dict[str, object] = {
            "spec_verify_ct": r.verify_ct, "spec_accept_length": round(r.accept_length, 6),
            "spec_accept_rate": round(r.accept_rate, 6),
            "spec_accepted_drafts" if old else "spec_num_correct_drafts": r.correct_drafts,
            "spec_proposed_drafts" if old else "spec_num_proposed_drafts": r.proposed_drafts}
        if (0, 5, 15) <= rel < (0, 5, 20):  # recorded on 0.5.17 (and in the 0.5.15/0.5.19 wheels): legacy names too
            fields.update(spec_accepted_drafts=r.correct_drafts, spec_proposed_drafts=r.proposed_drafts,
                          spec_correct_drafts_histogram=list(r.histogram), spec_accept_histogram=list(r.histogram))
        elif rel >= (0, 5, 20):  # the 0.5.23 wheel: no legacy names, one histogram
            fields["spec_correct_drafts_histogram"] = list(r.histogram)
        return fields

    def finish_reason(self, r: SimRequest):
        if r.finish_reason == "length":
            return {"type": "length", "length": r.max_new_tokens}
        if r.finish_reason == "abort":
            return {"type": "abort", "message": "Abort before prefill" if not r.out else "Abort in waiting queue"}
        if r.finish_reason == "stop":
            return {"type": "stop", "matched": EOS_ID}
        return None

    def meta_info(self, r: SimRequest, first: bool = False) -> dict:
        """``meta_info`` with the key set and order of a real 0.5.17 (http/generate_*): the timing keys,
        ``e2e_latency`` and the ``spec_*`` fields only once the request finished."""
        now = time.time()
        begun = now - (time.monotonic() - r.start)
        meta: dict[str, object] = {
            "id": r.rid, "finish_reason": self.finish_reason(r), "prompt_tokens": r.prompt_tokens,
            "weight_version": "default", "num_retractions": 0, "forward_entry_time": begun,
            "prefill_finished_time": begun + 0.001, "queue_time": 0.0001,
            "reasoning_tokens": min(r.completion_tokens, r.think_end), "completion_tokens": r.completion_tokens,
            "cached_tokens": 0, "cached_tokens_details": None, "dp_rank": None}
        if r.finish_reason is None:
            if first:
                meta["response_sent_to_client_ts"] = now
            return meta
        meta["e2e_latency"] = round(time.monotonic() - r.start, 6)
        if self.args.speculative and not self.args.no_spec_fields:
            meta.update(self.spec_fields(r))
        e2e = max(float(meta["e2e_latency"]), 1e-6)  # type: ignore[arg-type]
        meta.update(request_received_ts=begun, api_server_dispatch_finish_ts=begun + 0.0005,
                    request_finished_ts=now, decode_throughput=r.completion_tokens / e2e,
                    response_sent_to_client_ts=now)
        return meta

    # ---- /generate -------------------------------------------------------------------------
    async def generate(self, req: Request, resp: Response, internal: bool = False) -> SimRequest | None:
        body = req.json()
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        text, ids = body.get("text"), body.get("input_ids")
        if text is None and ids is None:
            raise BadRequest("Either text or input_ids should be provided.")
        if isinstance(text, list) or (isinstance(ids, list) and ids and isinstance(ids[0], list)):
            raise BadRequest("batched /generate is not supported by the simulator; send one prompt per request")
        self.received("/generate", body)
        sp = body.get("sampling_params") or {}
        given = sp.get("max_new_tokens")
        if isinstance(given, int) and not isinstance(given, bool) and given < 0:  # SGLang's own words
            raise GenerateError(f"max_new_tokens must be at least 0, got {given}.")
        max_new = _int_field(sp, "max_new_tokens", 128)
        if isinstance(text, str):
            prompt, ptok = text, answers.count_prompt_tokens(text)
        elif isinstance(ids, list):
            prompt, ptok = " ".join(map(str, ids)), max(1, len(ids))
        else:
            raise BadRequest("text must be a string, input_ids a list of token ids")
        # /generate at temperature 0 is greedy: the same prompt gets the same answer every time
        greedy = sp.get("temperature", 1.0) == 0
        r = self.make_request(prompt, ptok, max_new, bool(sp.get("ignore_eos")), True, body.get("seed"), greedy)
        if isinstance(body.get("rid"), str):
            r.rid = body["rid"]
        r.streaming = bool(body.get("stream"))
        if body.get("stream"):
            resp.start_stream()
            transport = resp.writer.transport

            def on_step(sr: SimRequest, a: int, b: int) -> None:
                if transport.is_closing():  # the client went away: abort, as SGLang does
                    resp.closed = True
                    self.engine.abort(sr.rid)
                    return
                payload = {"text": self.hostile + "".join(sr.out), "output_ids": _ids(sr.out),
                           "meta_info": self.meta_info(sr, first=a == 0)}
                resp.chunk("data: " + _dumps(payload, separators=(",", ":")) + "\n\n")

            r.on_step = on_step
            await self.engine.submit(r)
            resp.chunk("data: [DONE]\n\n")
            resp.end_stream()
            return r
        await self.engine.submit(r)
        out = {"text": self.hostile + "".join(r.out), "output_ids": _ids(r.out),
               "meta_info": self.meta_info(r)}
        resp.send_json(200, out)
        return r

    # ---- /v1/chat/completions ---------------------------------------------------------------
    async def chat(self, req: Request, resp: Response) -> None:
        body = req.json()
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        self.received("/v1/chat/completions", body)
        messages = body.get("messages")
        if messages is None:
            raise ValidationError(validation_message("/v1/chat/completions", [
                {"type": "missing", "loc": ("body", "messages"), "msg": "Field required", "input": body}]))
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list")
        max_new = body.get("max_completion_tokens", body.get("max_tokens"))
        max_new = _int_field({"max_tokens": max_new}, "max_tokens", None)
        prompt = render_chat(messages)
        ptok = answers.count_prompt_tokens(prompt)
        ctx = self.args.context_length
        if max_new is not None and ptok + max_new > ctx:
            raise BadRequest(
                f"Requested token count exceeds the model's maximum context length of {ctx} tokens. You requested "
                f"a total of {ptok + max_new} tokens: {ptok} tokens from the input messages and {max_new} tokens "
                "for the completion. Please reduce the number of tokens in the input messages or the completion "
                "to fit within the limit.")
        if max_new is None:
            max_new = max(1, self.args.context_length - ptok)
        kwargs = body.get("chat_template_kwargs") or {}
        thinking = kwargs.get("enable_thinking", kwargs.get("thinking", True)) is not False
        r = self.make_request(prompt, ptok, max_new, bool(body.get("ignore_eos")), thinking, body.get("seed"))
        separate = bool(self.args.reasoning_parser) and body.get("separate_reasoning", True) is not False
        # before 0.5.19 chat sends no spec field at all, whatever the request asks (recorded on 0.5.17)
        want_spec = bool(body.get("return_spec_tokens_details")) and self.args.speculative \
            and not self.args.no_spec_fields \
            and self.args.chat_spec_details
        model = body.get("model") or self.args.served_model_name
        created = int(time.time())
        r.streaming = bool(body.get("stream"))
        if body.get("stream"):
            await self._chat_stream(r, resp, body, separate, want_spec, model, created)
            return
        await self.engine.submit(r)
        reasoning, content = self.split(r, 0, len(r.out), separate)
        msg = {"role": "assistant", "content": self.hostile + content,
               "reasoning_content": reasoning if separate else None, "tool_calls": None}
        out = {"id": r.rid, "object": "chat.completion", "created": created, "model": model,
               "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": self.oai_finish(r),
                            "matched_stop": EOS_ID if r.finish_reason == "stop" else None}],
               "usage": self.usage(r), "metadata": {"weight_version": "default"}}
        if want_spec:
            out["sglext"] = {"spec_tokens_details": self.spec_fields(r)}
        resp.send_json(200, out)

    def split(self, r: SimRequest, a: int, b: int, separate: bool) -> tuple[str, str]:
        """(reasoning, content) text of output tokens a..b."""
        if not separate:
            return "", "".join(r.out[a:b])
        end = r.think_end
        reasoning = "".join(t for t in r.out[a:min(b, end)] if t not in (answers.THINK_OPEN, answers.THINK_CLOSE))
        content = "".join(r.out[max(a, end):b])
        if end and (a < end <= b or a == end):  # the chunk starts at or spans the end of thinking
            content = content.lstrip("\n")
        return reasoning, content

    def oai_finish(self, r: SimRequest) -> str:
        return {"stop": "stop", "length": "length", "abort": "abort"}.get(r.finish_reason or "", "stop")

    def usage(self, r: SimRequest) -> dict:
        return {"prompt_tokens": r.prompt_tokens, "total_tokens": r.prompt_tokens + r.completion_tokens,
                "completion_tokens": r.completion_tokens, "prompt_tokens_details": None,
                "reasoning_tokens": min(r.completion_tokens, r.think_end)}

    async def _chat_stream(self, r, resp, body, separate, want_spec, model, created) -> None:
        resp.start_stream()
        transport = resp.writer.transport
        head = (f'data: {{"id":"{r.rid}","object":"chat.completion.chunk","created":{created},'
                f'"model":{_dumps(model)},"choices":[{{"index":0,"delta":')
        # no "usage" key on a chunk unless continuous_usage_stats; deltas carry "reasoning_content": null
        # when no reasoning parser splits them (recorded on 0.5.17: http/chat_stream_*.sse)
        tail = ',"logprobs":null,"finish_reason":null,"matched_stop":null}]}\n\n'
        nul = "" if separate else '"reasoning_content":null,'
        options = body.get("stream_options") or {}
        continuous = bool(options.get("include_usage") and options.get("continuous_usage_stats"))
        ptok = r.prompt_tokens
        resp.chunk(head + "{" + nul + '"role":"assistant","content":' + _dumps(self.hostile) + "}" + tail)

        def end(b: int) -> str:
            """The chunk's tail: with continuous_usage_stats, the usage so far (as SGLang sends it)."""
            if not continuous:
                return tail
            return (',"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":{"prompt_tokens":'
                    f'{ptok},"total_tokens":{ptok + b},"completion_tokens":{b},"prompt_tokens_details":null,'
                    f'"reasoning_tokens":{min(b, r.think_end)}}}}}\n\n')

        def on_step(sr: SimRequest, a: int, b: int) -> None:
            if transport.is_closing():  # the client went away: abort, as SGLang does
                resp.closed = True
                self.engine.abort(sr.rid)
                return
            if a == b:
                return
            if not separate:
                resp.chunk(head + "{" + nul + '"content":' + _dumps("".join(sr.out[a:b])) + "}" + end(b))
                return
            reasoning, content = self.split(sr, a, b, separate)
            if reasoning and content:
                delta = f'{{"content":{_dumps(content)},"reasoning_content":{_dumps(reasoning)}}}'
            elif reasoning:
                delta = f'{{"reasoning_content":{_dumps(reasoning)}}}'
            elif content:
                delta = f'{{"content":{_dumps(content)}}}'
            else:
                return
            resp.chunk(head + delta + end(b))

        r.on_step = on_step
        await self.engine.submit(r)
        final = {"id": r.rid, "object": "chat.completion.chunk", "created": created, "model": model,
                 "choices": [{"index": 0, "delta": {} if separate else {"reasoning_content": None}, "logprobs": None,
                              "finish_reason": self.oai_finish(r),
                              "matched_stop": EOS_ID if r.finish_reason == "stop" else None}]}
        if want_spec:
            final["sglext"] = {"spec_tokens_details": self.spec_fields(r)}
        resp.chunk("data: " + _dumps(final, separators=(",", ":")) + "\n\n")
        if options.get("include_usage"):
            usage = {"id": r.rid, "object": "chat.completion.chunk", "created": created, "model": model,
                     "choices": [], "usage": self.usage(r)}
            resp.chunk("data: " + _dumps(usage, separators=(",", ":")) + "\n\n")
        resp.chunk("data: [DONE]\n\n")
        resp.end_stream()

    # ---- /v1/completions --------------------------------------------------------------------
    async def completion(self, req: Request, resp: Response) -> None:
        """OpenAI text completions, framed as a real 0.5.17 (http/completions_stream.sse)."""
        body = req.json()
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        self.received("/v1/completions", body)
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise BadRequest("prompt must be a string (the simulator takes one prompt per request)")
        ptok = answers.count_prompt_tokens(prompt)
        max_new = _int_field({"max_tokens": body.get("max_tokens")}, "max_tokens", 16)
        r = self.make_request(prompt, ptok, max_new, bool(body.get("ignore_eos")), True, body.get("seed"),
                              body.get("temperature", 1.0) == 0)
        model = body.get("model") or self.args.served_model_name
        created = int(time.time())
        r.streaming = bool(body.get("stream"))

        def choice(text: str, finish) -> dict:
            return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "matched_stop": None}

        def doc(choices: list, usage: dict | None) -> dict:
            out = {"id": r.rid, "object": "text_completion", "created": created, "model": model, "choices": choices}
            return out if usage is None else {**out, "usage": usage}

        if not body.get("stream"):
            await self.engine.submit(r)
            resp.send_json(200, doc([choice(self.hostile + "".join(r.out), self.oai_finish(r))], self.usage(r)))
            return
        options = body.get("stream_options") or {}
        continuous = bool(options.get("include_usage") and options.get("continuous_usage_stats"))
        resp.start_stream()
        transport = resp.writer.transport

        def usage_at(n: int) -> dict:
            return {"prompt_tokens": ptok, "total_tokens": ptok + n, "completion_tokens": n,
                    "prompt_tokens_details": None, "reasoning_tokens": min(n, r.think_end)}

        def on_step(sr: SimRequest, a: int, b: int) -> None:
            if transport.is_closing():
                resp.closed = True
                self.engine.abort(sr.rid)
                return
            finish = self.oai_finish(sr) if sr.finish_reason is not None else None
            if a == b and finish is None:
                return
            text = (self.hostile if a == 0 and b else "") + "".join(sr.out[a:b])
            resp.chunk("data: " + _dumps(doc([choice(text, finish)], usage_at(b) if continuous else None),
                                         separators=(",", ":")) + "\n\n")

        r.on_step = on_step
        await self.engine.submit(r)
        if options.get("include_usage"):
            final = {k: v for k, v in usage_at(r.completion_tokens).items() if k != "prompt_tokens_details"}
            resp.chunk("data: " + _dumps(doc([], final), separators=(",", ":")) + "\n\n")
        resp.chunk("data: [DONE]\n\n")
        resp.end_stream()

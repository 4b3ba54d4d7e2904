"""Async streaming client for SGLang's ``/v1/chat/completions`` and ``/generate`` (httpx).

Per request it measures TTFT, the gaps between content-bearing chunks (one chunk per decode or
verify step: the *step gap*) and how many tokens each chunk brought (from the cumulative
``usage.completion_tokens`` that ``continuous_usage_stats`` puts on every chunk, or
``meta_info.completion_tokens`` on /generate; one token per chunk when the server sends no count,
which ``on_tokens`` is told: its second argument, ``exact``, is False for such an approximate count),
end-to-end time, output tokens, finish reason and speculative acceptance
(``sglext.spec_tokens_details`` on chat, ``meta_info`` on /generate; both arrive in the last chunk),
and keeps the reasoning and the answer text apart. The event loop only splits lines and decodes
JSON; nothing is tokenised here.

Acceptance is reported only for a server that runs speculative decoding: ``StreamingClient.speculative``
(from ``/server_info``'s ``speculative_algorithm``, set by whoever read it) False means every
request's acceptance is None, whatever spec fields arrive; None (unknown) takes the fields as they come.

What the server sends is untrusted text: every string of a ``RequestResult`` (answer, reasoning,
finish reason, error) and of ``get_json`` is made plain (``backends.core.plaintext``) here, where it enters.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from backends.core.apikey import auth_headers
from backends.core.errors import ServerError
from backends.logs.acceptance import SpecCounters, parse_counters
from backends.core.plaintext import plain, plain_data
from workloads.client.result import RequestResult
from workloads.client.transport import RELEASE, LeanTransport, WaveRelease

TokenCallback = Callable[[int, bool], None]  # (new tokens, exact): exact False when counted by chunks
_decode = json.JSONDecoder().decode


@dataclass
class _Stream:
    """Mutable state while one response streams in."""

    endpoint: str
    t0: float
    wall: float
    on_tokens: TokenCallback | None
    speculative: bool | None = None
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    text_so_far: str = ""
    first: float | None = None
    last: float = 0.0  # the latest token chunk's time; read only once `first` is set
    itl: list[float] = field(default_factory=list)
    itl_tokens: list[int] = field(default_factory=list)
    at_last: int = 0  # completion tokens counted up to the last content chunk
    chunks: int = 0
    counted: int = 0  # tokens reported to on_tokens so far
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    verify_ct: int | None = None
    accept_len: float | None = None
    error: str | None = None
    done: bool = False
    separated: bool = False

    def mark_token_chunk(self, t: float, total: int | None) -> None:
        """A chunk that brought tokens, at ``t``; ``total``: the cumulative count it carried, if any."""
        n = 1 if total is None else total - self.at_last
        self.at_last = total if total is not None else self.at_last + 1
        if self.first is None:
            self.first = t
        else:
            self.itl.append(t - self.last)
            self.itl_tokens.append(n if n > 0 else 1)
        self.last = t

    def count(self, total: int | None, fallback: int, exact: bool = True) -> None:
        """Report new tokens: from a cumulative count when the server sends one, else per chunk
        (the last resort: a chunk may carry several tokens under speculation, so it is "approx")."""
        if self.on_tokens is None:
            return
        new = (total - self.counted) if total is not None else fallback
        if new > 0:
            self.counted += new
            self.on_tokens(new, exact and total is not None)

    def spec(self, details: dict | None) -> None:
        if not isinstance(details, dict):
            return
        if details.get("spec_verify_ct") is not None:
            self.verify_ct = int(details["spec_verify_ct"])
        if details.get("spec_accept_length") is not None:
            self.accept_len = float(details["spec_accept_length"])

    def feed_chat(self, obj: dict, t: float) -> None:
        self.chunks += 1
        if "error" in obj or obj.get("object") == "error":
            err = obj.get("error") or obj
            self.error = f"server error mid-stream: {err.get('message', err) if isinstance(err, dict) else err}"
            return
        produced = False
        choices = obj.get("choices")
        if choices:
            choice = choices[0]
            delta = choice.get("delta")
            if delta:
                text = delta.get("content")
                if text:
                    self.content.append(text)
                    produced = True
                text = delta.get("reasoning_content")
                if text:
                    self.reasoning.append(text)
                    self.separated = produced = True
            reason = choice.get("finish_reason")
            if reason:
                self.finish_reason = reason
                if reason == "abort":
                    self.error = "request aborted by the server"
        usage = obj.get("usage")
        total = None
        if usage:
            self.prompt_tokens = usage.get("prompt_tokens", self.prompt_tokens)
            if usage.get("completion_tokens") is not None:
                total = self.completion_tokens = int(usage["completion_tokens"])
        if produced:
            self.mark_token_chunk(t, total)
        sglext = obj.get("sglext")
        if sglext:
            self.spec(sglext.get("spec_tokens_details"))
        if self.on_tokens is not None:
            self.count(self.completion_tokens if usage else None, 1 if produced else 0)

    def feed_generate(self, obj: dict, t: float) -> None:
        self.chunks += 1
        if obj.get("error"):
            err = obj["error"]
            self.error = f"server error mid-stream: {err.get('message', err) if isinstance(err, dict) else err}"
            return
        text = obj.get("text") or ""
        # /generate streams the whole text so far; tolerate servers that send increments.
        if text.startswith(self.text_so_far):
            piece = text[len(self.text_so_far):]
            self.text_so_far = text
        else:
            piece = text
            self.text_so_far += text
        meta = obj.get("meta_info") or {}
        total = meta.get("completion_tokens")
        grew = total is not None and total > (self.completion_tokens or 0)
        if total is not None:
            total = int(total)
        if piece or grew:
            self.mark_token_chunk(t, total)
        if total is not None:
            self.completion_tokens = total
        if meta.get("prompt_tokens") is not None:
            self.prompt_tokens = int(meta["prompt_tokens"])
        fr = meta.get("finish_reason")
        if fr:
            self.finish_reason = fr.get("type") if isinstance(fr, dict) else str(fr)
            if self.finish_reason == "abort":
                msg = fr.get("message") if isinstance(fr, dict) else None
                self.error = f"request aborted by the server{': ' + msg if msg else ''}"
        self.spec(meta)
        self.count(self.completion_tokens, 1 if piece else 0)

    def result(self, error: str | None = None, unreachable: bool = False) -> RequestResult:
        end = time.perf_counter()
        error = error or self.error
        if error is None and not self.done and self.finish_reason is None:
            error = "the stream ended before the response finished (server closed the connection)"
        tokens = self.completion_tokens
        if tokens is None:  # no usage block: count the chunks that carried tokens
            tokens = len(self.itl) + (self.first is not None)
        self.count(tokens, 0, exact=self.completion_tokens is not None)
        content = "".join(self.content) if self.endpoint == "chat" else self.text_so_far
        return RequestResult(
            ok=error is None, error=None if error is None else plain(error), endpoint=self.endpoint,
            started_at=self.wall,
            ttft_s=None if self.first is None else self.first - self.t0, itl_s=tuple(self.itl),
            e2e_s=end - self.t0, output_tokens=tokens, prompt_tokens=self.prompt_tokens,
            finish_reason=None if self.finish_reason is None else plain(str(self.finish_reason), one_line=True),
            spec_verify_ct=self.verify_ct, spec_accept_length=self.accept_len,
            content=plain(content), reasoning_content=plain("".join(self.reasoning)) if self.separated else None,
            chunks=self.chunks, unreachable=unreachable, itl_tokens=tuple(self.itl_tokens),
            speculative=self.speculative)


KEY_HINT = ("the server wants an API key: pass --api-key, or set DDTUNE_API_KEY (ddtune uses the --api-key "
            "of a server it launched by itself)")


class StreamingClient:
    """One connection pool sized to the concurrency. Use as ``async with StreamingClient(url) as c``."""

    def __init__(self, base_url: str, *, api_key: str | None = None, concurrency: int = 64,
                 request_timeout_s: float = 900.0, connect_timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key  # kept so run records can redact it from what the server reports
        self._transport = LeanTransport(concurrency, connect_timeout_s, request_timeout_s)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=auth_headers(api_key),
            transport=self._transport,
            timeout=httpx.Timeout(request_timeout_s, connect=connect_timeout_s, pool=None),
        )
        self._model: str | None = None
        # whether the server runs speculative decoding (from /server_info); None: not known
        self.speculative: bool | None = None
        self.metrics: bool | None = None  # whether /metrics has the spec counters; None: not asked yet

    async def __aenter__(self) -> StreamingClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def warm(self, n: int) -> int:
        """Have ``n`` connections open and idle (see ``LeanTransport.warm``); how many are."""
        return await self._transport.warm(httpx.URL(self.base_url), n)

    async def get_json(self, path: str) -> dict:
        try:
            resp = await self._http.get(path)
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot reach {self.base_url}{path}: {_describe(exc)}",
                              hint="is the server up? check --url or 'ddtune status'") from exc
        if resp.status_code != 200:
            hint = KEY_HINT if resp.status_code in (401, 403) else None
            raise ServerError(f"{self.base_url}{path} answered HTTP {resp.status_code}: {_body(resp)}",
                              hint=hint or (NOT_SGLANG if resp.status_code == 404 else None))
        try:
            return plain_data(resp.json())
        except ValueError as exc:
            raise ServerError(f"{self.base_url}{path} did not answer JSON") from exc

    async def spec_counters(self) -> SpecCounters | None:
        """The server's generation and verify-call counters from ``/metrics`` (``--enable-metrics``);
        None when it has none (asked once: a 404 or a text without them is not asked again)."""
        if self.metrics is False:
            return None
        try:
            resp = await self._http.get("/metrics")
        except httpx.HTTPError:
            return None
        counters = parse_counters(resp.text) if resp.status_code == 200 else None
        if counters is None and resp.status_code in (200, 404):
            self.metrics = False
        elif counters is not None:
            self.metrics = True
        return counters

    async def model_id(self) -> str:
        """The served model's id from /v1/models (SGLang accepts any name; this keeps logs honest)."""
        if self._model is None:
            try:
                data = (await self.get_json("/v1/models")).get("data") or []
                self._model = data[0]["id"] if data else "default"
            except (ServerError, KeyError, TypeError, IndexError):
                self._model = "default"
        return self._model

    async def chat(self, messages: list[dict], *, max_tokens: int, temperature: float = 0.0,
                   extra: dict | None = None, on_tokens: TokenCallback | None = None,
                   release: WaveRelease | None = None) -> RequestResult:
        """One streamed chat completion. With ``release`` the request leaves when its whole wave
        is ready (``transport.WaveRelease``), and its times count from that moment."""
        body = {"model": await self.model_id(), "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, "stream": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True},
                "return_spec_tokens_details": True}
        if extra:
            body.update(extra)
        return await self._stream("/v1/chat/completions", body, "chat", on_tokens, release)

    async def generate(self, text: str, *, max_tokens: int, temperature: float = 0.0,
                       sampling: dict | None = None, on_tokens: TokenCallback | None = None) -> RequestResult:
        params = {"max_new_tokens": max_tokens, "temperature": temperature, **(sampling or {})}
        body = {"text": text, "sampling_params": params, "stream": True}
        return await self._stream("/generate", body, "generate", on_tokens)

    async def _stream(self, path: str, body: dict, endpoint: str, on_tokens: TokenCallback | None,
                      release: WaveRelease | None = None) -> RequestResult:
        st = _Stream(endpoint, time.perf_counter(), time.time(), on_tokens, self.speculative)
        feed = st.feed_chat if endpoint == "chat" else st.feed_generate
        answered = False
        ticket = release.ticket() if release is not None else None
        try:
            async with self._http.stream("POST", path, json=body,
                                         extensions={RELEASE: ticket} if ticket else None) as resp:
                answered = True
                if ticket is not None and release is not None and release.released_at is not None:
                    st.t0, st.wall = release.released_at  # the request left when its wave did
                if resp.status_code != 200:
                    text = (await resp.aread()).decode("utf-8", "replace")
                    return st.result(f"HTTP {resp.status_code} from {path}: {_body(resp, text)}")
                buf = b""
                async for piece in resp.aiter_raw():
                    if st.done:
                        continue  # drain to the end of the body so the connection can be reused
                    buf += piece
                    if b"\n" not in piece:
                        continue
                    lines = buf.split(b"\n")
                    buf = lines.pop()
                    now = time.perf_counter()
                    for line in lines:
                        if line[:5] != b"data:":
                            continue
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            st.done = True
                            break
                        try:
                            feed(_decode(data.decode()), now)
                        except (ValueError, AttributeError, TypeError) as exc:
                            return st.result(f"unreadable stream data from {path}: {exc}")
                        if st.error:
                            return st.result()
        except httpx.ConnectError as exc:
            return st.result(f"cannot connect to {self.base_url}: {_describe(exc)}", unreachable=True)
        except httpx.TimeoutException as exc:
            return st.result(f"timed out waiting for {path}: {_describe(exc)}")
        except httpx.HTTPError as exc:
            # Dropped before any response (a dying server still accepting for a moment) counts as unreachable.
            return st.result(f"connection lost during {path}: {_describe(exc)}", unreachable=not answered)
        finally:
            if ticket is not None:
                ticket.drop()  # never reached the gate (no connection): do not hold the wave back
        return st.result()


NOT_SGLANG = "is this an SGLang server? give its base URL, e.g. --url http://127.0.0.1:30000"


def _body(resp: httpx.Response, text: str | None = None, limit: int = 300) -> str:
    """An error response's body as one short line: an HTML page (another web server, a proxy's error
    page) is named, never dumped."""
    text = resp.text if text is None else text
    if "html" in resp.headers.get("content-type", "") or text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
        return f"an HTML page ({len(text):,} characters), not an API answer"
    return _short(text, limit)


def _short(text: str, limit: int = 300) -> str:
    """An error body on one line, plain (it is the server's text)."""
    text = " ".join(plain(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__

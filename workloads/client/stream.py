"""Async streaming client for SGLang's ``/v1/chat/completions`` and ``/generate`` (httpx).

Per request it measures TTFT, the gaps between content-bearing chunks (one chunk per decode or
verify step: the *step gap*) and how many tokens each chunk brought (from the cumulative
``usage.completion_tokens`` that ``continuous_usage_stats`` puts on every chunk, or
``meta_info.completion_tokens`` on /generate; one token per chunk when the server sends no count,
which ``on_tokens`` is told: its second argument, ``exact``, is False for such an approximate count),
end-to-end time, output tokens, finish reason and speculative acceptance
(``sglext.spec_tokens_details`` on chat, ``meta_info`` on /generate; both arrive in the last chunk),
and keeps the reasoning and the answer text apart. llama.cpp's server says acceptance in the last
chunk's ``timings`` (``predicted_n``, ``draft_n_accepted``: its target steps are their difference).
The event loop only splits lines and decodes JSON; nothing is tokenised here.

Acceptance is reported only for a server that runs speculative decoding: ``StreamingClient.speculative``
(from ``/server_info``'s ``speculative_algorithm``, set by whoever read it) False means every
request's acceptance is None, whatever spec fields arrive; None (unknown) takes the fields as they come.

What the server sends is untrusted: every string of a ``RequestResult`` (answer, reasoning,
finish reason, error) and of ``get_json`` is made plain (``backends.core.plaintext``) here, where it
enters; every answer is read through ``backends.core.answers`` (a stream within the bytes, line length
and time its ``max_tokens`` allows, a JSON answer within its size and depth), and every count or
acceptance is used only when it is a finite, non-negative, plausible number (else it is left out and
named in ``RequestResult.dropped``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from backends.core import (ERROR_BYTES, TOKENS_MAX, BadAnswer, StreamLimits, amount, count, idle_s, read_body,
    dropped_shown, sse_lines)
from backends.core import auth_headers
from backends.server import steps_of
from backends.core import escaped, plain
from workloads.client.queries import ServerQueries, body_line, describe, short
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
    most: int = TOKENS_MAX  # the most completion tokens the request can bring (most_tokens(max_tokens))
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
    dropped: list[str] = field(default_factory=list)  # numbers the server sent that ddtune would not use

    def checked(self, name: str, value, ceiling: int = TOKENS_MAX) -> int | None:
        """``value`` as a count from 0 to ``ceiling``; None, with a note, when it is not one."""
        return self.kept(name, value, count(value, ceiling))

    def kept(self, name: str, value, ok):
        """``ok`` (what a check made of ``value``); when it is None but ``value`` was not, the note."""
        if ok is None and value is not None and len(self.dropped) < 8:
            note = f"{name}={dropped_shown(value)}"
            if note not in self.dropped:
                self.dropped.append(note)
        return ok

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
        new = min((total - self.counted) if total is not None else fallback, self.most - self.counted)
        if new > 0:
            self.counted += new
            self.on_tokens(new, exact and total is not None)

    def spec(self, details: dict | None) -> None:
        if not isinstance(details, dict):
            return
        verify_ct = self.checked("spec_verify_ct", details.get("spec_verify_ct"))
        if verify_ct is not None:
            self.verify_ct = verify_ct
        accept_len = details.get("spec_accept_length")
        accept_len = self.kept("spec_accept_length", accept_len, amount(accept_len))
        if accept_len is not None:
            self.accept_len = accept_len

    def feed_chat(self, obj: dict, t: float) -> None:
        self.chunks += 1
        if "error" in obj or obj.get("object") == "error":
            self.error = _server_error(obj.get("error") or obj)
            return
        produced = False
        choices = obj.get("choices")
        if choices:
            choice = choices[0]
            delta = choice.get("delta")
            if delta:
                text = delta.get("content")
                if text and type(text) is str:
                    self.content.append(text)
                    produced = True
                text = delta.get("reasoning_content")
                if text and type(text) is str:
                    self.reasoning.append(text)
                    self.separated = produced = True
            reason = choice.get("finish_reason")
            if reason and type(reason) is str:
                self.finish_reason = reason
                if reason == "abort":
                    self.error = "request aborted by the server"
        usage = obj.get("usage")
        total = None
        if usage:
            # a count is an int in range (the common case, checked inline on this hot path), else checked()
            prompt = usage.get("prompt_tokens")
            if not (type(prompt) is int and 0 <= prompt <= TOKENS_MAX):
                prompt = self.checked("prompt_tokens", prompt)
            if prompt is not None:
                self.prompt_tokens = prompt
            total = usage.get("completion_tokens")
            if not (type(total) is int and 0 <= total <= self.most):
                total = self.checked("completion_tokens", total, self.most)
            if total is not None:
                self.completion_tokens = total
        if produced:
            self.mark_token_chunk(t, total)
        sglext = obj.get("sglext")
        if sglext:
            self.spec(sglext.get("spec_tokens_details"))
        timings = obj.get("timings")
        if timings and type(timings) is dict:  # llama.cpp: its target steps are tokens - accepted draft tokens
            steps = steps_of(self.checked("predicted_n", timings.get("predicted_n"), self.most),
                             self.checked("draft_n_accepted", timings.get("draft_n_accepted"), self.most))
            self.verify_ct = steps or self.verify_ct
        if self.on_tokens is not None:
            self.count(self.completion_tokens if usage else None, 1 if produced else 0)

    def feed_generate(self, obj: dict, t: float) -> None:
        self.chunks += 1
        if obj.get("error"):
            self.error = _server_error(obj["error"])
            return
        text = obj.get("text") or ""
        if type(text) is not str:
            raise TypeError(f"text is a {type(text).__name__}")
        # /generate streams the whole text so far; tolerate servers that send increments.
        if text.startswith(self.text_so_far):
            piece = text[len(self.text_so_far):]
            self.text_so_far = text
        else:
            piece = text
            self.text_so_far += text
        meta = obj.get("meta_info") or {}
        total = self.checked("completion_tokens", meta.get("completion_tokens"), self.most)
        grew = total is not None and total > (self.completion_tokens or 0)
        if piece or grew:
            self.mark_token_chunk(t, total)
        if total is not None:
            self.completion_tokens = total
        prompt = self.checked("prompt_tokens", meta.get("prompt_tokens"))
        if prompt is not None:
            self.prompt_tokens = prompt
        fr = meta.get("finish_reason")
        if fr:
            kind = fr.get("type") if isinstance(fr, dict) else fr
            self.finish_reason = kind if type(kind) is str else "unknown"
            if self.finish_reason == "abort":
                msg = fr.get("message") if isinstance(fr, dict) else None
                self.error = f"request aborted by the server{': ' + short(msg) if type(msg) is str else ''}"
        self.spec(meta)
        self.count(self.completion_tokens, 1 if piece else 0)

    def result(self, error: str | None = None, unreachable: bool = False) -> RequestResult:
        end = time.perf_counter()
        error = error or self.error
        if error is None and not self.done and self.finish_reason is None:
            error = "the stream ended before the response finished (server closed the connection)"
        tokens = self.completion_tokens
        if tokens is None:  # no usage block: count the chunks that carried tokens
            tokens = min(len(self.itl) + (self.first is not None), self.most)
        self.count(tokens, 0, exact=self.completion_tokens is not None)
        content = "".join(self.content) if self.endpoint == "chat" else self.text_so_far
        return RequestResult(
            ok=error is None, error=None if error is None else escaped(plain(error)), endpoint=self.endpoint,
            started_at=self.wall,
            ttft_s=None if self.first is None else self.first - self.t0, itl_s=tuple(self.itl),
            e2e_s=end - self.t0, output_tokens=tokens, prompt_tokens=self.prompt_tokens,
            finish_reason=None if self.finish_reason is None else plain(str(self.finish_reason), one_line=True),
            spec_verify_ct=self.verify_ct, spec_accept_length=self.accept_len,
            content=plain(content), reasoning_content=plain("".join(self.reasoning)) if self.separated else None,
            chunks=self.chunks, unreachable=unreachable, itl_tokens=tuple(self.itl_tokens),
            speculative=self.speculative, dropped=tuple(self.dropped))


class StreamingClient(ServerQueries):
    """One connection pool sized to the concurrency. Use as ``async with StreamingClient(url) as c``."""

    def __init__(self, base_url: str, *, api_key: str | None = None, concurrency: int = 64,
                 request_timeout_s: float = 900.0, connect_timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key  # kept so run records can redact it from what the server reports
        self._idle_s = request_timeout_s = idle_s(request_timeout_s)  # DDTUNE_IDLE_S overrides it
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
        return await self._stream("/v1/chat/completions", body, "chat", max_tokens, on_tokens, release)

    async def generate(self, text: str, *, max_tokens: int, temperature: float = 0.0,
                       sampling: dict | None = None, on_tokens: TokenCallback | None = None) -> RequestResult:
        params = {"max_new_tokens": max_tokens, "temperature": temperature, **(sampling or {})}
        body = {"text": text, "sampling_params": params, "stream": True}
        return await self._stream("/generate", body, "generate", max_tokens, on_tokens)

    async def _stream(self, path: str, body: dict, endpoint: str, max_tokens: int, on_tokens: TokenCallback | None,
                      release: WaveRelease | None = None) -> RequestResult:
        """One streamed answer, read within the bounds its ``max_tokens`` allows (``StreamLimits``)."""
        st = _Stream(endpoint, time.perf_counter(), time.time(), on_tokens, self.speculative, most_tokens(max_tokens))
        limits = StreamLimits.for_tokens(max_tokens, self._idle_s, cumulative=endpoint == "generate")
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
                    text = (await read_body(resp, ERROR_BYTES)).decode("utf-8", "replace")
                    return st.result(f"HTTP {resp.status_code} from {path}: {body_line(text)}")
                async for lines in sse_lines(resp, limits):
                    if st.done:
                        continue  # drain to the end of the body so the connection can be reused
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
                        except (ValueError, AttributeError, TypeError, LookupError) as exc:
                            return st.result(f"unreadable stream data from {path}: {short(str(exc))}")
                        except RecursionError:
                            return st.result(f"unreadable stream data from {path}: JSON nested too deep")
                        if st.error:
                            return st.result()
        except BadAnswer as exc:  # too large, a line too long, bad framing: the answer is not used
            return st.result() if st.done else st.result(f"unusable answer from {path}: {describe(exc)}")
        except httpx.ConnectError as exc:
            return st.result(f"cannot connect to {self.base_url}: {describe(exc)}", unreachable=True)
        except httpx.TimeoutException as exc:
            return st.result() if st.done else st.result(f"timed out waiting for {path}: {describe(exc)}")
        except httpx.HTTPError as exc:
            # Dropped before any response (a dying server still accepting for a moment) counts as unreachable.
            return st.result(f"connection lost during {path}: {describe(exc)}", unreachable=not answered)
        finally:
            if ticket is not None:
                ticket.drop()  # never reached the gate (no connection): do not hold the wave back
        return st.result()


def most_tokens(max_tokens: int) -> int:
    """The most completion tokens a request for ``max_tokens`` may report: a server stops at what it
    was asked for; twice that and a draft block is beyond any overshoot of a speculative last step."""
    return 2 * max(1, max_tokens) + 64


def _server_error(err) -> str:
    """The server's own error, on one line and short (its message when it sent one as text)."""
    message = err.get("message") if isinstance(err, dict) else err
    return f"server error mid-stream: {short(message) if type(message) is str else 'no message'}"

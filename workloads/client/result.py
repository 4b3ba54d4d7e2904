"""One streamed request's measurements, as ``StreamingClient`` returns them: what every
workload (bench cells, the live load, the eval) reads and records."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestResult:
    ok: bool
    error: str | None
    endpoint: str
    started_at: float  # wall clock (epoch seconds)
    ttft_s: float | None
    itl_s: tuple[float, ...]
    e2e_s: float
    output_tokens: int
    prompt_tokens: int | None
    finish_reason: str | None
    spec_verify_ct: int | None
    spec_accept_length: float | None  # as the server reported it
    content: str
    reasoning_content: str | None
    chunks: int
    unreachable: bool = False  # the connection could not be made at all
    itl_tokens: tuple[int, ...] = ()  # tokens that arrived at the end of each gap in itl_s (empty: one each)
    speculative: bool | None = None  # what the client knew of the server: False hides the spec fields
    dropped: tuple[str, ...] = ()  # numbers the server sent that were not counts ("completion_tokens=-7"), unused

    @property
    def verify_steps(self) -> int | None:
        """The server's verify steps for this request; None unless the server is speculative."""
        return None if self.speculative is False else (self.spec_verify_ct or None)

    @property
    def acceptance(self) -> float | None:
        """Accepted tokens per verify step (bonus included): completion_tokens / spec_verify_ct;
        None for a server that does not run speculative decoding."""
        if self.speculative is False:
            return None
        if self.spec_verify_ct:
            return self.output_tokens / self.spec_verify_ct
        return self.spec_accept_length

    @property
    def itl_token_s(self) -> list[float]:
        """Inter-token latency per token (sglang.bench_serving's ITL): each chunk's gap divided by
        the tokens it brought, once per token."""
        if not self.itl_tokens:
            return list(self.itl_s)
        out: list[float] = []
        for gap, n in zip(self.itl_s, self.itl_tokens, strict=False):
            if n > 1:
                out.extend([gap / n] * n)
            else:
                out.append(gap)
        return out

    @property
    def decode_tok_s(self) -> float | None:
        """This stream's output rate after its first token."""
        if self.ttft_s is None or self.output_tokens < 2 or self.e2e_s <= self.ttft_s:
            return None
        return (self.output_tokens - 1) / (self.e2e_s - self.ttft_s)

    def raw(self) -> dict:
        """The raw response record saved in responses.jsonl (regrade reads the first four keys)."""
        return {"content": self.content, "reasoning_content": self.reasoning_content,
                "finish_reason": self.finish_reason, "ok": self.ok, "error": self.error,
                "started_at": self.started_at, "ttft_s": self.ttft_s, "e2e_s": self.e2e_s,
                "output_tokens": self.output_tokens, "prompt_tokens": self.prompt_tokens,
                "spec_verify_ct": self.spec_verify_ct, "spec_accept_length": self.spec_accept_length,
                "chunks": self.chunks, **({"dropped": list(self.dropped)} if self.dropped else {})}

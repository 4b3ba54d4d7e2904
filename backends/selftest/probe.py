"""The requests ``ddtune selftest`` sends, and the acceptance they show.

Each request is a greedy ``/generate`` (native: its ``meta_info`` carries ``spec_verify_ct`` on every
SGLang with speculation, 0.5.11 on); the server's counters (``/metrics``) are read around the batch.
Per request: completion tokens / verify steps. Over the batch: Δtokens / Δverify calls.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from backends.core.answers import BadAnswer, fetch
from backends.core.apikey import auth_headers
from backends.launch.dialect import SGLANG, Dialect
from backends.logs.acceptance import DraftCounters, SpecCounters, counter_acceptance, draft_counters, parse_counters

PROMPT = "def fibonacci(n):\n    "


@dataclass(frozen=True)
class Measured:
    per_request: tuple[float | None, ...]   # each request's acceptance (None: its answer had no spec field)
    counters: float | None                  # Δtokens / Δverify calls over the batch, None without counters
    errors: tuple[str, ...] = ()
    drafts: DraftCounters | None = None     # llama.cpp's draft counters over the batch (per position too)

    @property
    def request_values(self) -> list[float]:
        return [v for v in self.per_request if v is not None]

    @property
    def value(self) -> float | None:
        """The batch's acceptance: the requests' own fields first, else the counters."""
        values = self.request_values
        return sum(values) / len(values) if values else self.counters

    @property
    def source(self) -> str | None:
        if self.request_values:
            return "request"
        return "counters" if self.counters is not None else None


async def _counters(client: httpx.AsyncClient, url: str) -> tuple[SpecCounters | None, DraftCounters | None]:
    try:
        answer = await fetch(client, "GET", f"{url}/metrics", idle=10.0)
    except httpx.HTTPError:
        return None, None
    if answer.status != 200:
        return None, None
    return parse_counters(answer.text), draft_counters(answer.text)


async def measure(url: str, api_key: str | None, requests: int, max_new_tokens: int,
                  concurrency: int = 8, timeout: float = 120.0, dialect: Dialect = SGLANG) -> Measured:
    """Send ``requests`` greedy generations, ``concurrency`` at a time, in the server's dialect
    (SGLang's ``/generate``, llama.cpp's ``/completion``); their acceptance."""
    url = url.rstrip("/")
    limit = asyncio.Semaphore(concurrency)
    errors: list[str] = []
    path = dialect.generate_path
    async with httpx.AsyncClient(trust_env=False, headers=auth_headers(api_key)) as client:
        before, drafts_before = await _counters(client, url)

        async def one(i: int) -> float | None:
            async with limit:
                try:
                    answer = await fetch(client, "POST", f"{url}{path}", idle=timeout, json=dialect.generate_body(
                        PROMPT + f"# {i}\n", max_new_tokens, ignore_eos=True))
                    if answer.status != 200:
                        raise BadAnswer(f"HTTP {answer.status}")
                    return dialect.acceptance(answer.json())
                except httpx.HTTPError as exc:
                    errors.append(f"{path}: {type(exc).__name__}: {str(exc)[:200]}")
                    return None

        values = await asyncio.gather(*(one(i) for i in range(requests)))
        after, drafts_after = await _counters(client, url)
    drafts = drafts_after.minus(drafts_before) if drafts_after is not None else None
    return Measured(tuple(values), counter_acceptance(before, after), tuple(errors), drafts)

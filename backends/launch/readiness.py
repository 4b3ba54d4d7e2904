"""Race-free readiness: the process we started owns the listening socket and generates a token.

``/v1/models``, ``/model_info`` and ``/server_info`` answer before warmup ends, and an old server
still draining answers them too; neither is proof. A probe costs the server at most one 1-token
``/generate`` and runs at most once per ``min_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from backends.core.answers import BadAnswer, fetch
from backends.core.apikey import auth_headers
from backends.core.plaintext import plain
from backends.launch.dialect import SGLANG, Dialect
from backends.launch.process import port_owner, tree_pids

PROBE_PROMPT = "Hello"


@dataclass(frozen=True)
class ProbeResult:
    ready: bool
    reason: str
    owner_pid: int | None = None
    generated: int = 0
    unreachable: bool = False  # no connection at all (refused, no route, no such host): nothing listens


def connect_failure(url: str, exc: httpx.ConnectError) -> str:
    """``connection refused at URL`` when the OS refused it, else what went wrong, naming the URL."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return f"connection refused at {url}"
        cause = cause.__cause__ or cause.__context__
    if "refused" in str(exc).lower():
        return f"connection refused at {url}"
    return f"cannot connect to {url}: {exc or type(exc).__name__}"


def owner_check(port: int, expected_pid: int | None) -> ProbeResult | None:
    """None when the socket check passes; else the reason it does not (nobody, or someone else, listens)."""
    owner = port_owner(port)
    if owner is None:
        return ProbeResult(False, f"nothing listens on port {port} yet")
    if expected_pid is None:
        return None
    if owner.pid is None or owner.pid not in tree_pids(expected_pid):
        return ProbeResult(False, f"{owner.describe()}, not by the server ddtune started (pid {expected_pid})",
                           owner_pid=owner.pid)
    return None


async def generate_one_token(client: httpx.AsyncClient, base_url: str, timeout: float = 30.0,
                             dialect: Dialect = SGLANG) -> int:
    """One 1-token generation in the server's dialect (SGLang: POST /generate with max_new_tokens=1;
    llama.cpp: POST /completion with n_predict=1); returns the tokens generated (0 if none). The
    answer is read within bounds (``backends.core.answers``): ``timeout`` seconds without a byte, twice
    that in all; anything unusable is an httpx.HTTPError."""
    path = dialect.generate_path
    answer = await fetch(client, "POST", f"{base_url}{path}", idle=timeout,
                         json=dialect.generate_body(PROBE_PROMPT, 1))
    if answer.status != 200:
        raise BadAnswer(f"{path} returned HTTP {answer.status}")
    # one was asked for: a larger count is the server's error, not tokens
    return min(dialect.tokens(answer.json()), 1)


class ReadinessProbe:
    """Probe ``base_url`` for the server with ``expected_pid`` (None for a remote endpoint).

    ``probe()`` never runs more often than ``min_interval``: a call that comes sooner waits."""

    def __init__(self, base_url: str, port: int | None, expected_pid: int | None,
                 min_interval: float = 1.0, check_owner: bool = True, api_key: str | None = None,
                 dialect: Dialect = SGLANG) -> None:
        self.base_url = base_url.rstrip("/")
        self.dialect = dialect
        self.port = port
        self.expected_pid = expected_pid
        self.min_interval = min_interval
        self.check_owner = check_owner and port is not None
        self.generations = 0  # 1-token generations sent, for the cost figure
        self._last = float("-inf")
        self._client: httpx.AsyncClient | None = None
        self._headers = auth_headers(api_key)

    async def __aenter__(self) -> ReadinessProbe:
        self._client = httpx.AsyncClient(trust_env=False, headers=self._headers)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def probe(self) -> ProbeResult:
        wait = self._last + self.min_interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._last = time.monotonic()
        if self.check_owner:
            failed = await asyncio.to_thread(owner_check, self.port, self.expected_pid)  # type: ignore[arg-type]
            if failed is not None:
                return failed
        client = self._client or httpx.AsyncClient(trust_env=False, headers=self._headers)
        try:
            self.generations += 1
            tokens = await generate_one_token(client, self.base_url, dialect=self.dialect)
        except httpx.ConnectError as exc:
            return ProbeResult(False, connect_failure(self.base_url, exc), owner_pid=self.expected_pid,
                               unreachable=True)
        except httpx.ConnectTimeout:
            return ProbeResult(False, f"no answer from {self.base_url} (connecting timed out)",
                               owner_pid=self.expected_pid, unreachable=True)
        except (httpx.HTTPError, ValueError) as exc:
            return ProbeResult(False, f"1-token {self.dialect.generate_path} failed: {plain(str(exc), one_line=True)}",
                               owner_pid=self.expected_pid)
        finally:
            if client is not self._client:
                await client.aclose()
        if tokens < 1:
            return ProbeResult(False, f"1-token {self.dialect.generate_path} returned no tokens",
                               owner_pid=self.expected_pid)
        return ProbeResult(True, f"pid {self.expected_pid} owns port {self.port} and generated {tokens} token(s)"
                           if self.expected_pid else f"{self.base_url} generated {tokens} token(s)",
                           owner_pid=self.expected_pid, generated=tokens)


async def fetch_server_info(url: str, api_key: str | None = None, note: Callable[[str], object] | None = None,
                            dialect: Dialect = SGLANG) -> dict | None:
    """The server's account of itself (SGLang's ``/server_info``; llama.cpp's ``/props`` in its keys),
    or None when it cannot be had. Untrusted, so read through ``backends.core.answers``: bounded, its
    strings plain and on one line (each is shown after a label: a version, a model, a knob's value),
    numbers out of range dropped and said to ``note``."""
    try:
        async with httpx.AsyncClient(trust_env=False, headers=auth_headers(api_key)) as client:
            return await dialect.fetch_info(client, url, note)
    except httpx.HTTPError:
        return None

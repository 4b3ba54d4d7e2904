"""A server's answers, read within bounds: the one door every HTTP read of ddtune goes through.

A server is untrusted, so no answer may exhaust ddtune or throw it off its feet. What this module
holds to, for every answer:

- **size after decoding**: a gzip or deflate body is inflated here, a piece at a time, and the read
  stops at a cap (``BODY_BYTES`` for a JSON answer, ``ERROR_BYTES`` for an error page), so a
  compression bomb costs at most the cap; an encoding ddtune cannot inflate is refused. A whole
  answer is never read by httpx itself (``response.json()`` of an unbounded body).
- **time**: no byte for ``idle_s`` ends a read (``DDTUNE_IDLE_S`` overrides each caller's default);
  a whole JSON answer gets ``2 * idle_s``, a stream ``idle_s + TOKEN_S`` per requested token, so a
  trickle of one byte every few seconds ends too.
- **streams** (``sse_lines``): total bytes and the length of one line are capped as well, both
  derived from ``max_tokens`` (``StreamLimits``).
- **JSON** (``Answer.json``): nested at most ``DEPTH`` levels; a number that is not finite or is
  larger than any count (``NUMBER_MAX``) is dropped (null), and said in ``Answer.dropped``; every
  string made plain (``backends.core.plaintext``), and with ``one_line`` its line breaks shown
  escaped, so a value shown after a label stays on its line.
- **numbers used as counts** (``count``, ``amount``): finite, non-negative and plausible, else None
  and a note from the caller.

Whatever goes wrong is an ``httpx.HTTPError``: ``BadAnswer`` (a ``DecodingError``) for an answer
that is too large, too deep, not JSON or badly framed, ``httpx.ReadTimeout`` for one that took too
long. Callers already catch those for a server that went away; no other exception leaves here.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from backends.core.apikey import auth_headers
from backends.core.datafile import loads
from backends.core.plaintext import escaped, plain

IDLE_ENV = "DDTUNE_IDLE_S"      # seconds without a byte from the server before a read is given up
BODY_BYTES = 8 << 20            # a whole JSON answer, decoded (/server_info is ~10 KB)
ERROR_BYTES = 64 << 10          # an error page: only its first line is shown
DEPTH = 32                      # JSON nesting (SGLang's deepest answer has 4 levels)
NUMBER_MAX = 2**53              # larger than any count a server has; exact as a float
TOKENS_MAX = 100_000_000        # a token count no model comes near (the longest contexts are ~10M)
ACCEPT_MAX = 1024.0             # accepted tokens per verify step: at most the draft tree's depth + 1
TOKEN_S = 0.5                   # a stream's time per requested token, after idle_s for the first
LINE_BYTES = 1 << 20            # one SSE line, plus LINE_PER_TOKEN a requested token
LINE_PER_TOKEN = 64             # /generate repeats the text so far in every line
STREAM_BYTES = 1 << 20          # one stream's bytes, plus STREAM_PER_TOKEN a requested token
STREAM_PER_TOKEN = 4096         # an SSE chunk of one token is ~400 bytes


class BadAnswer(httpx.DecodingError):
    """An answer ddtune will not use: too large, too deep, not JSON, or framed wrongly."""


def idle_s(default: float) -> float:
    """The idle limit: ``DDTUNE_IDLE_S`` when it is set to a positive number, else ``default``."""
    raw = os.environ.get(IDLE_ENV)
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


def count(value: Any, ceiling: int = TOKENS_MAX) -> int | None:
    """``value`` as a count: an integer (or integral float) from 0 to ``ceiling``; else None."""
    if type(value) is int:
        return value if 0 <= value <= ceiling else None
    if type(value) is float and value.is_integer() and 0 <= value <= ceiling:
        return int(value)
    return None


def amount(value: Any, ceiling: float = ACCEPT_MAX) -> float | None:
    """``value`` as a finite number from 0 to ``ceiling``; else None."""
    if type(value) is float or type(value) is int:
        return float(value) if 0 <= value <= ceiling else None  # NaN fails both comparisons
    return None


def dropped_shown(value: Any, limit: int = 40) -> str:
    """A dropped value, short, for a note: ``-7``, ``nan``, ``99999999999999999999... (400 digits)``."""
    text = escaped(plain(repr(value) if isinstance(value, str) else str(value)))
    unit = "digits" if type(value) is int else "characters"
    return text if len(text) <= limit else f"{text[:20]}... ({len(text)} {unit})"


# --- bodies ----------------------------------------------------------------------------------------------------

def _inflater(encoding: str | None) -> Callable[[bytes, int], bytes] | None:
    """A function that inflates the next piece of a body into at most N bytes; None for identity."""
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("identity", ""):
        return None
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise BadAnswer(f"the answer is encoded as {encoding!r}, which ddtune does not read")
    inflate = zlib.decompressobj(47 if encoding != "deflate" else 15)  # 47: gzip or zlib header, auto

    def piece(data: bytes, at_most: int) -> bytes:
        try:
            return inflate.decompress(data, at_most)
        except zlib.error as exc:
            raise BadAnswer(f"the answer's {encoding} body is corrupt ({exc})") from None
    return piece


async def read_body(resp: httpx.Response, limit: int) -> bytes:
    """The whole body of ``resp`` (opened with ``stream``), decoded; BadAnswer past ``limit`` bytes."""
    inflate = _inflater(resp.headers.get("content-encoding"))
    out = bytearray()
    async for raw in resp.aiter_raw():
        out += raw if inflate is None else inflate(raw, limit + 1 - len(out))
        if len(out) > limit:
            raise BadAnswer(f"the answer is larger than {_size(limit)}")
    return bytes(out)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


class Answer:
    """A whole answer: ``status``, the decoded ``body`` (at most the cap), and ``json()``."""

    def __init__(self, status: int, body: bytes, where: str) -> None:
        self.status, self.body, self.where = status, body, where
        self.dropped: list[str] = []  # the numbers json() dropped, as notes

    @property
    def text(self) -> str:
        """The body as plain text (an error page)."""
        return plain(self.body.decode("utf-8", "replace"))

    def json(self, one_line: bool = False) -> Any:
        """The body as JSON (see the module docstring); BadAnswer when it is not usable JSON."""
        try:
            value = loads(self.body, DEPTH)
        except RecursionError:  # loads turns it into TooDeep; a deeper stack still may not
            raise BadAnswer(f"{self.where} answered JSON nested too deep") from None
        except ValueError as exc:  # not UTF-8, not JSON, nested too deep, an int of 4300+ digits
            why = plain(str(exc), one_line=True)[:120]
            raise BadAnswer(f"{self.where} did not answer usable JSON ({why})") from None
        return _clean(value, self.dropped, one_line, "")


def _clean(value: Any, dropped: list[str], one_line: bool, at: str) -> Any:
    """Strings plain (line breaks escaped with ``one_line``), numbers out of range dropped (None)."""
    if isinstance(value, str):
        return escaped(plain(value)) if one_line else plain(value)
    if isinstance(value, dict):
        return {_clean(k, dropped, one_line, at): _clean(v, dropped, one_line, f"{at}.{k}" if at else str(k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, dropped, one_line, f"{at}[{i}]") for i, v in enumerate(value)]
    if (type(value) is int or type(value) is float) and not -NUMBER_MAX <= value <= NUMBER_MAX:  # NaN too
        if len(dropped) < 8:
            dropped.append(f"{escaped(plain(at))[:60] or 'the answer'}={dropped_shown(value)}")
        return None
    return value


async def fetch(client: httpx.AsyncClient, method: str, url: str, *, json: Any = None, idle: float = 10.0,
                limit: int = BODY_BYTES) -> Answer:
    """Send one request and read its whole answer within bounds: ``idle`` seconds at most without a
    byte (``DDTUNE_IDLE_S`` overrides it), twice that for the whole answer, ``limit`` bytes decoded
    (an error status: ``ERROR_BYTES``). Raises httpx.HTTPError (BadAnswer among them) only."""
    idle = idle_s(idle)
    try:
        async with asyncio.timeout(2 * idle):
            async with client.stream(method, url, json=json, timeout=httpx.Timeout(idle)) as resp:
                body = await read_body(resp, limit if resp.status_code < 400 else ERROR_BYTES)
    except TimeoutError:
        raise httpx.ReadTimeout(f"no whole answer within {2 * idle:g} s") from None
    except (ValueError, LookupError) as exc:  # what httpx may let through from malformed framing
        raise BadAnswer(f"unreadable answer ({plain(str(exc), one_line=True)[:120]})") from None
    return Answer(resp.status_code, body, resp.url.path)


async def fetch_once(url: str, method: str = "GET", *, api_key: str | None = None, json: Any = None,
                     idle: float = 10.0, limit: int = BODY_BYTES) -> Answer:
    """``fetch`` on a client of its own (no proxy from the environment; the API key as a Bearer token)."""
    async with httpx.AsyncClient(trust_env=False, headers=auth_headers(api_key)) as client:
        return await fetch(client, method, url, json=json, idle=idle, limit=limit)


# --- streams ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StreamLimits:
    """The bounds of one streamed answer, from the tokens it may bring."""

    idle_s: float
    wall_s: float
    total_bytes: int
    line_bytes: int

    @classmethod
    def for_tokens(cls, max_tokens: int, idle_default: float, cumulative: bool = False) -> StreamLimits:
        """``cumulative``: each line repeats the text so far (``/generate``), so the bytes grow
        with the square of the tokens."""
        idle = idle_s(idle_default)
        tokens = max(1, max_tokens)
        line = LINE_BYTES + LINE_PER_TOKEN * tokens
        total = STREAM_BYTES + STREAM_PER_TOKEN * tokens + (LINE_PER_TOKEN * tokens * tokens if cumulative else 0)
        return cls(idle, idle + TOKEN_S * tokens, total, line)


async def sse_lines(resp: httpx.Response, limits: StreamLimits) -> AsyncIterator[list[bytes]]:
    """The complete lines of a streamed body, a batch per read, within ``limits``: BadAnswer for a
    stream or a line that grows past its cap, httpx.ReadTimeout once ``wall_s`` has passed (the
    idle limit is the transport's read timeout)."""
    inflate = _inflater(resp.headers.get("content-encoding"))
    deadline = time.monotonic() + limits.wall_s
    total = 0
    buf = b""
    async for piece in resp.aiter_raw():
        if inflate is not None:
            piece = inflate(piece, limits.total_bytes + 1 - total)
        total += len(piece)
        if total > limits.total_bytes:
            raise BadAnswer(f"the stream went past {_size(limits.total_bytes)}, more than its max_tokens allow")
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout(f"the stream was not over after {limits.wall_s:g} s (the idle limit, "
                                    f"{limits.idle_s:g} s, plus {TOKEN_S:g} s a requested token)")
        buf += piece
        if b"\n" not in piece:
            if len(buf) > limits.line_bytes:
                raise BadAnswer(f"a line of the stream went past {_size(limits.line_bytes)}")
            continue
        lines = buf.split(b"\n")
        buf = lines.pop()
        if len(buf) > limits.line_bytes:
            raise BadAnswer(f"a line of the stream went past {_size(limits.line_bytes)}")
        yield lines

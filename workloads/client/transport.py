"""A lean HTTP/1.1 transport for httpx, for plain-http streaming at high chunk rates.

httpx's default transport parses the body with h11 one HTTP chunk at a time; an SSE stream sends one
chunk per event, so at 64 streams the parser, not the network, bounds the client. This transport
reads whatever the socket has (up to 64 KiB), strips the chunked framing from the whole buffer at
once and hands httpx one block per read. Connections are kept alive and pooled, at most ``limit``
open. https URLs go to httpx's own transport. Errors are httpx's exception types: an answer framed
wrongly (a Content-Length that is not a number, a chunk size that is not one, a size line or trailer
that never ends) is a ``BadAnswer`` (``backends.core.answers``, an ``httpx.DecodingError``), never a
ValueError; chunk data is handed on as it arrives, so a chunk that says it is huge costs only what is sent.

A request may carry a ``WaveRelease`` ticket (extension ``"ddtune.release"``): it then waits at that
barrier with its connection open and its bytes ready, and leaves when every request of its wave
has arrived there (or dropped out), so a whole wave reaches the server within a millisecond.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from backends.core import BadAnswer
from backends.core import plain

_READ = 65536
_SIZE_LINE = 4096  # a chunk-size line with its extensions: longer is not HTTP
RELEASE = "ddtune.release"  # the request extension that carries a WaveRelease ticket


class WaveRelease:
    """A one-shot barrier for one wave of requests: each request waits at it with its bytes
    ready, and the last one to arrive lets them all go at once. Unlike ``asyncio.Barrier`` a party
    may drop out (its connection failed before it got there) without holding the others back."""

    def __init__(self, parties: int) -> None:
        self._left = parties
        self._go = asyncio.Event()
        self.released_at: tuple[float, float] | None = None  # (perf_counter, time.time) when it opened

    def ticket(self) -> Ticket:
        return Ticket(self)

    def _leave(self) -> None:
        self._left -= 1
        if self._left <= 0 and not self._go.is_set():
            self.released_at = (time.perf_counter(), time.time())
            self._go.set()


class Ticket:
    """One request's place at a WaveRelease: ``wait()`` or ``drop()``, whichever comes first, counts."""

    __slots__ = ("gate", "used")

    def __init__(self, gate: WaveRelease) -> None:
        self.gate, self.used = gate, False

    async def wait(self) -> None:
        if not self.used:
            self.used = True
            self.gate._leave()
        await self.gate._go.wait()

    def drop(self) -> None:
        if not self.used:
            self.used = True
            self.gate._leave()


class _Conn:
    __slots__ = ("reader", "writer", "key")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, key: tuple) -> None:
        self.reader, self.writer, self.key = reader, writer, key

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass


class LeanTransport(httpx.AsyncBaseTransport):
    def __init__(self, limit: int, connect_timeout_s: float, read_timeout_s: float) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._limit = limit
        self._idle: dict[tuple, list[_Conn]] = {}
        self._connect_timeout = connect_timeout_s
        self._read_timeout = read_timeout_s
        self._fallback = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=limit))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            ticket = request.extensions.get(RELEASE)
            if ticket is not None:
                await ticket.wait()
            return await self._fallback.handle_async_request(request)
        body = await request.aread()
        await self._slots.acquire()
        try:
            conn, reused = await self._checkout(request)
            try:
                head = await self._exchange(conn, request, body)
            except (httpx.RemoteProtocolError, httpx.ReadError):
                if not reused:
                    raise
                # A kept-alive connection the server had already closed: retry once on a fresh one.
                conn, _ = await self._open(request)
                head = await self._exchange(conn, request, body)
            status, headers, rest = head
            stream = _Body(self, conn, headers, rest, self._read_timeout)
        except BaseException:
            self._slots.release()
            raise
        return httpx.Response(status, headers=headers, stream=stream, request=request,
                              extensions={"http_version": b"HTTP/1.1"})

    async def _checkout(self, request: httpx.Request) -> tuple[_Conn, bool]:
        key = (request.url.host, request.url.port or 80)
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn, True
            conn.close()
        return await self._open(request)

    async def _open(self, request: httpx.Request) -> tuple[_Conn, bool]:
        key = (request.url.host, request.url.port or 80)
        try:
            async with asyncio.timeout(self._connect_timeout):
                reader, writer = await asyncio.open_connection(key[0], key[1], limit=_READ * 4)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connecting to {key[0]}:{key[1]} timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(f"{exc.strerror or exc} ({key[0]}:{key[1]})") from exc
        return _Conn(reader, writer, key), False

    async def _exchange(self, conn: _Conn, request: httpx.Request, body: bytes):
        target = request.url.raw_path.decode("ascii")
        lines = [f"{request.method} {target} HTTP/1.1"]
        for name, value in request.headers.raw:
            lines.append(f"{name.decode('latin-1')}: {value.decode('latin-1')}")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        ticket = request.extensions.get(RELEASE)
        if ticket is not None:
            await ticket.wait()  # the wave leaves together
        conn.writer.write(data)
        try:
            async with asyncio.timeout(self._read_timeout):
                await conn.writer.drain()
                raw = await conn.reader.readuntil(b"\r\n\r\n")
        except TimeoutError as exc:
            conn.close()
            raise httpx.ReadTimeout("no response headers in time") from exc
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
            conn.close()
            raise httpx.RemoteProtocolError("the server closed the connection before answering") from exc
        head = raw.decode("latin-1").split("\r\n")
        try:
            status = int(head[0].split(" ", 2)[1])
            if not 100 <= status <= 599:
                raise ValueError(status)
        except (IndexError, ValueError) as exc:
            conn.close()
            raise httpx.RemoteProtocolError(f"bad status line {plain(head[0][:80])!r}") from exc
        headers = [tuple(h.split(":", 1)) for h in head[1:] if ":" in h]
        return status, [(k.strip(), v.strip()) for k, v in headers], b""

    async def warm(self, url: httpx.URL, n: int) -> int:
        """Open connections to ``url`` until ``n`` are idle (at most the pool's limit), so that
        requests sent together do not each wait for a handshake; returns how many are idle."""
        if url.scheme != "http":
            return 0
        key = (url.host, url.port or 80)
        idle = self._idle.setdefault(key, [])
        idle[:] = [c for c in idle if not c.reader.at_eof() and not c.writer.is_closing()]
        want = min(n, self._limit) - len(idle)
        if want > 0:
            request = httpx.Request("GET", url)
            opened = await asyncio.gather(*(self._open(request) for _ in range(want)), return_exceptions=True)
            idle.extend(conn for conn, _ in (o for o in opened if not isinstance(o, BaseException)))
        return len(idle)

    def release(self, conn: _Conn, reusable: bool) -> None:
        if reusable:
            self._idle.setdefault(conn.key, []).append(conn)
        else:
            conn.close()
        self._slots.release()

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
        await self._fallback.aclose()


def _content_length(value: str | None) -> int | None:
    """Content-Length as a number of bytes; a value that is not one is bad framing, not a crash."""
    if value is None:
        return None
    value = value.strip()
    if not value.isdigit() or len(value) > 19 or not value.isascii():
        raise BadAnswer(f"bad Content-Length {plain(value[:40])!r} in the response")
    return int(value)


def _chunk_size(line: bytes) -> int:
    digits = line.split(b";", 1)[0].strip()
    try:
        if len(digits) <= 16:
            return int(digits, 16)
    except ValueError:
        pass
    raise BadAnswer(f"bad chunk size {digits[:40]!r} in the response body")


class _Body(httpx.AsyncByteStream):
    def __init__(self, transport: LeanTransport, conn: _Conn, headers: list, rest: bytes, timeout: float) -> None:
        self.t, self.conn, self.timeout = transport, conn, timeout
        lower = {k.lower(): v.lower() for k, v in headers}
        self.chunked = "chunked" in lower.get("transfer-encoding", "")
        self.length = None if self.chunked else _content_length(lower.get("content-length"))
        self.keep = lower.get("connection") != "close" and (self.chunked or self.length is not None)
        self.complete = False
        self.released = False

    async def _read(self) -> bytes:
        try:
            async with asyncio.timeout(self.timeout):
                return await self.conn.reader.read(_READ)
        except TimeoutError as exc:
            raise httpx.ReadTimeout("the server sent nothing in time") from exc
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc

    async def __aiter__(self):
        if self.chunked:
            async for block in self._chunked():
                yield block
        elif self.length is not None:
            left = self.length
            while left > 0:
                data = await self._read()
                if not data:
                    raise httpx.RemoteProtocolError("the server closed the connection mid-body")
                if len(data) > left:  # more than it announced: the connection is not reusable
                    data, self.keep = data[:left], False
                left -= len(data)
                yield data
            self.complete = True
        else:
            while data := await self._read():
                yield data
            self.complete = True

    async def _chunked(self):
        """Chunk data as it arrives, a chunk's part at a time: a chunk that says it is huge costs
        what it sends, and a size line that never ends is refused at ``_SIZE_LINE`` bytes."""
        buf = b""
        need = -1  # chunk data bytes still expected; 0: the CRLF after the data; -1: a size line comes next
        final = False  # the zero-size chunk was seen; waiting for the end of the trailer
        while True:
            data = await self._read()
            if not data:
                if final:
                    break
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body "
                                                "(incomplete chunked read)")
            buf = buf + data if buf else data
            end = len(buf)
            out = []
            pos = 0
            while not final:
                if need < 0:
                    eol = buf.find(b"\r\n", pos)
                    if eol < 0:
                        if end - pos > _SIZE_LINE:
                            raise BadAnswer("a chunk-size line without an end in the response body")
                        break
                    need = _chunk_size(buf[pos:eol])
                    pos = eol + 2
                    if need == 0:
                        final = True
                        break
                if need > 0:
                    take = min(need, end - pos)
                    if take <= 0:
                        break
                    out.append(buf[pos:pos + take])
                    pos += take
                    need -= take
                    if need:
                        break
                if end - pos < 2:
                    break
                pos += 2  # the CRLF after the chunk's data
                need = -1
            buf = buf[pos:]
            if out:
                yield b"".join(out)
            if final and (buf.startswith(b"\r\n") or b"\r\n\r\n" in buf):
                break
            if final and len(buf) > _SIZE_LINE:
                raise BadAnswer("a trailer without an end in the response body")
        self.complete = True

    async def aclose(self) -> None:
        if not self.released:
            self.released = True
            self.t.release(self.conn, self.keep and self.complete)

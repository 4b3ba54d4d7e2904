"""A lean HTTP/1.1 transport for httpx, for plain-http streaming at high chunk rates.

httpx's default transport parses the body with h11 one HTTP chunk at a time; an SSE stream sends one
chunk per event, so at 64 streams the parser, not the network, bounds the client. This transport
reads whatever the socket has (up to 64 KiB), strips the chunked framing from the whole buffer at
once and hands httpx one block per read. Connections are kept alive and pooled, at most ``limit``
open. https URLs go to httpx's own transport. Errors are httpx's exception types.

A request may carry a ``WaveRelease`` ticket (extension ``"ddtune.release"``): it then waits at that
barrier with its connection open and its bytes ready, and leaves when every request of its wave
has arrived there (or dropped out), so a whole wave reaches the server within a millisecond.
"""

from __future__ import annotations

from __future__ import annotations

import asyncio
import time

import httpx

_READ = 65536
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
        except BaseException:
            self._slots.release()
            raise
        status, headers, rest = head
        stream = _Body(self, conn, headers, rest, self._read_timeout)
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
        except (IndexError, ValueError) as exc:
            conn.close()
            raise httpx.RemoteProtocolError(f"bad status line {head[0]!r}") from exc
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


class _Body(httpx.AsyncByteStream):
    def __init__(self, transport: LeanTransport, conn: _Conn, headers: list, rest: bytes, timeout: float) -> None:
        self.t, self.conn, self.timeout = transport, conn, timeout
        lower = {k.lower(): v.lower() for k, v in headers}
        self.chunked = "chunked" in lower.get("transfer-encoding", "")
        self.length = int(lower["content-length"]) if "content-length" in lower and not self.chunked else None
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
                left -= len(data)
                yield data
            self.complete = True
        else:
            while data := await self._read():
                yield data
            self.complete = True

    async def _chunked(self):
        buf = b""
        need = -1  # bytes of chunk data still expected; -1 means a size line comes next
        final = False  # the zero-size chunk was seen; waiting for the end of the trailer
        while True:
            data = await self._read()
            if not data:
                if final:
                    break
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body "
                                                "(incomplete chunked read)")
            buf += data
            out = []
            pos = 0
            while not final:
                if need < 0:
                    eol = buf.find(b"\r\n", pos)
                    if eol < 0:
                        break
                    try:
                        need = int(buf[pos:eol].split(b";", 1)[0], 16)
                    except ValueError as exc:
                        raise httpx.RemoteProtocolError("bad chunk size in the response body") from exc
                    pos = eol + 2
                    if need == 0:
                        final = True
                        break
                if len(buf) - pos < need + 2:
                    break
                out.append(buf[pos:pos + need])
                pos += need + 2
                need = -1
            buf = buf[pos:]
            if out:
                yield b"".join(out)
            if final and (buf.startswith(b"\r\n") or b"\r\n\r\n" in buf):
                break
        self.complete = True

    async def aclose(self) -> None:
        if not self.released:
            self.released = True
            self.t.release(self.conn, self.keep and self.complete)

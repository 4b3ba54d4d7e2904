"""A tiny HTTP/1.1 server on asyncio streams: keep-alive, Content-Length bodies, chunked SSE replies.

Just enough HTTP for the simulator and fast: no framework, one coroutine per connection.
``HttpServer(handler)`` calls ``await handler(request, response)`` per request.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

MAX_BODY = 64 * 1024 * 1024
_DIRTY: list[Response] = []   # responses with buffered stream chunks, written by flush_dirty()


def flush_dirty() -> None:
    """Write every buffered stream chunk: one socket write per connection per engine iteration."""
    global _DIRTY
    dirty, _DIRTY = _DIRTY, []
    for resp in dirty:
        resp.flush()


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    peer: str

    def json(self):
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    writer: asyncio.StreamWriter
    keep_alive: bool = True
    status: int = 0
    streaming: bool = False
    closed: bool = False
    extra_headers: list[tuple[str, str]] = field(default_factory=list)
    buf: list[bytes] = field(default_factory=list)

    def send(self, status: int, body: bytes | str = b"", content_type: str = "application/json") -> None:
        if isinstance(body, str):
            body = body.encode()
        self.status = status
        head = (f"HTTP/1.1 {status} {REASON.get(status, 'OK')}\r\ncontent-type: {content_type}\r\n"
                f"content-length: {len(body)}\r\n")
        head += "".join(f"{k}: {v}\r\n" for k, v in self.extra_headers)
        if not self.keep_alive:
            head += "connection: close\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)

    def send_json(self, status: int, obj) -> None:
        self.send(status, json.dumps(obj, separators=(",", ":")))

    def start_stream(self, status: int = 200, content_type: str = "text/event-stream") -> None:
        self.status = status
        self.streaming = True
        head = (f"HTTP/1.1 {status} {REASON.get(status, 'OK')}\r\ncontent-type: {content_type}\r\n"
                "cache-control: no-cache\r\ntransfer-encoding: chunked\r\n")
        if not self.keep_alive:
            head += "connection: close\r\n"
        self.writer.write(head.encode() + b"\r\n")

    def chunk(self, data: str) -> None:
        """Buffer one HTTP chunk; it is written at the next flush (end of the engine iteration)."""
        if self.closed:
            return
        raw = data.encode()
        if not self.buf:
            _DIRTY.append(self)
        self.buf.append(b"%x\r\n%s\r\n" % (len(raw), raw))

    def flush(self) -> None:
        if self.buf:
            data, self.buf = b"".join(self.buf), []
            if not self.closed:
                self.writer.write(data)

    def end_stream(self) -> None:
        if not self.closed:
            self.buf.append(b"0\r\n\r\n")
        self.flush()


REASON = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
          411: "Length Required", 413: "Payload Too Large", 500: "Internal Server Error",
          503: "Service Unavailable"}


class HttpServer:
    def __init__(self, handler) -> None:
        self.handler = handler
        self.server: asyncio.base_events.Server | None = None
        self.connections: set[asyncio.StreamWriter] = set()

    async def listen(self, host: str, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, host, port, reuse_address=True, backlog=1024)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for w in list(self.connections):
            w.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.add(writer)
        peername = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        peer = f"{peername[0]}:{peername[1]}"
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, version = lines[0].split(" ", 2)
                except ValueError:
                    writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    return
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                path, _, query = target.partition("?")
                keep = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
                resp = Response(writer, keep_alive=keep)
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    resp.keep_alive = False
                    resp.send_json(411, {"detail": "chunked request bodies are not supported; send Content-Length"})
                    return
                length = int(headers.get("content-length", "0") or 0)
                if length > MAX_BODY:
                    resp.keep_alive = False
                    resp.send_json(413, {"detail": "request body too large"})
                    return
                body = await reader.readexactly(length) if length else b""
                req = Request(method.upper(), path, query, headers, body, peer)
                try:
                    await self.handler(req, resp)
                except (ConnectionError, asyncio.CancelledError):
                    return
                if resp.status == 0:
                    resp.send_json(500, {"detail": "no response"})
                await writer.drain()
                if not resp.keep_alive or resp.closed:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self.connections.discard(writer)
            try:
                writer.close()
            except Exception:
                pass

"""The lean HTTP/1.1 transport under httpx: framing split anywhere, keep-alive, close, errors.

The simulator always frames its bodies the same way; these cases need a server that splits chunked
framing at arbitrary bytes, so a raw asyncio server on 127.0.0.1 plays that part.
"""

import asyncio

import httpx
import pytest

from backends.core.answers import BadAnswer
from workloads.client.transport import LeanTransport

EVENTS = [b'data: {"n": %d}\n\n' % i for i in range(20)]


def chunked(parts):
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


async def serve(handler):
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
    if length:
        await reader.readexactly(length[0])
    return head


async def fetch(url, transport, path="/x"):
    async with httpx.AsyncClient(base_url=url, transport=transport) as client:
        async with client.stream("POST", path, json={"a": 1}) as resp:
            return resp.status_code, b"".join([b async for b in resp.aiter_raw()])


@pytest.mark.parametrize("step", [1, 3, 7, 4096])
async def test_chunked_body_split_at_any_byte(step):
    connections = []

    async def handler(reader, writer):
        connections.append(writer)
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            body = chunked(EVENTS)
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            for i in range(0, len(body), step):
                writer.write(body[i:i + step])
                await writer.drain()
                await asyncio.sleep(0)

    server, url = await serve(handler)
    transport = LeanTransport(4, 5, 30)
    try:
        async with httpx.AsyncClient(base_url=url, transport=transport) as client:
            for _ in range(3):
                async with client.stream("POST", "/x", json={}) as resp:
                    data = b"".join([b async for b in resp.aiter_raw()])
                assert resp.status_code == 200 and data == b"".join(EVENTS)
        assert len(connections) == 1  # the connection was kept alive and reused
    finally:
        server.close()


async def test_content_length_and_connection_close():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nnot found")
        await writer.drain()
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end")
        await writer.drain()
        writer.close()

    server, url = await serve(handler)
    try:
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport(2, 5, 30)) as client:
            first = await client.post("/x", json={})  # same connection, then one read until close
            assert (first.status_code, first.content) == (404, b"not found")
            async with client.stream("POST", "/y", json={}) as resp:
                assert b"".join([b async for b in resp.aiter_raw()]) == b"until the end"
    finally:
        server.close()


async def test_body_cut_mid_stream_is_a_protocol_error():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunked(EVENTS[:2])[:-5])
        await writer.drain()
        writer.close()

    server, url = await serve(handler)
    try:
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
            await fetch(url, LeanTransport(2, 5, 30))
    finally:
        server.close()


async def test_nothing_listening_is_a_connect_error():
    server, url = await serve(lambda r, w: None)
    server.close()
    await server.wait_closed()
    with pytest.raises(httpx.ConnectError):
        await fetch(url, LeanTransport(2, 5, 30))


async def test_silent_server_is_a_read_timeout():
    async def handler(reader, writer):
        await read_request(reader)
        await asyncio.sleep(30)

    server, url = await serve(handler)
    try:
        with pytest.raises(httpx.ReadTimeout):
            await fetch(url, LeanTransport(2, 5, 0.3))
    finally:
        server.close()


async def test_pool_is_bounded_by_the_limit():
    live = []
    peak = []

    async def handler(reader, writer):
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            live.append(1)
            peak.append(len(live))
            await asyncio.sleep(0.05)
            live.pop()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

    server, url = await serve(handler)
    transport = LeanTransport(3, 5, 30)
    try:
        async with httpx.AsyncClient(base_url=url, transport=transport) as client:
            async def one():
                async with client.stream("POST", "/z", json={}) as resp:
                    return b"".join([b async for b in resp.aiter_raw()])
            assert await asyncio.gather(*(one() for _ in range(12))) == [b"ok"] * 12
        assert max(peak) <= 3
    finally:
        server.close()


def answering(head: bytes, *parts: bytes, pause: float = 0.0):
    """A handler that answers every request with ``head`` and then ``parts``, ``pause`` seconds apart."""
    async def handler(reader, writer):
        while True:
            try:
                await read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            writer.write(head)
            for part in parts:
                writer.write(part)
                await writer.drain()
                await asyncio.sleep(pause)
    return handler


@pytest.mark.parametrize(("head", "says"), [
    (b"HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\n", "bad Content-Length 'abc'"),
    (b"HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\n", "bad Content-Length '-5'"),
    (b"HTTP/1.1 200 OK\r\ncontent-length: " + b"9" * 400 + b"\r\n\r\n", "bad Content-Length '9999"),
])
async def test_a_content_length_that_is_no_number_is_bad_framing_and_frees_its_slot(head, says):
    server, url = await serve(answering(head, b"x"))
    transport = LeanTransport(1, 5, 5)  # one slot: a request that kept it would block the next for ever
    try:
        for _ in range(3):
            with pytest.raises(BadAnswer, match=says):
                await asyncio.wait_for(fetch(url, transport), 10)
    finally:
        server.close()


async def test_a_huge_chunk_is_handed_on_as_it_arrives():
    server, url = await serve(answering(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                                        b"ffffffffffffffff\r\n", b"first part", b", second part", pause=0.1))
    try:
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport(2, 5, 0.5)) as client:
            got = b""
            with pytest.raises(httpx.ReadTimeout):  # the rest of 2**64-1 bytes never comes
                async with client.stream("POST", "/x", json={}) as resp:
                    async for block in resp.aiter_raw():
                        got += block
        assert got == b"first part, second part"  # not held back until the chunk is whole
    finally:
        server.close()


@pytest.mark.parametrize(("body", "says"), [
    (b"1" * 5000, "a chunk-size line without an end"),
    (b"fffffffffffffffff\r\n", "bad chunk size"),           # 17 hex digits: more than 2**64
    (b"zz\r\n", "bad chunk size"),
    (b"2\r\nok\r\n0\r\n" + b"t" * 5000, "a trailer without an end"),
])
async def test_chunk_framing_that_never_ends_or_is_no_number_is_refused(body, says):
    server, url = await serve(answering(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", body))
    try:
        with pytest.raises(BadAnswer, match=says):
            await asyncio.wait_for(fetch(url, LeanTransport(2, 5, 5)), 10)
    finally:
        server.close()


@pytest.mark.parametrize("status", [b"HTTP/1.1 abc OK", b"HTTP/1.1 99 X", b"HTTP/1.1 " + b"2" * 400 + b" X"])
async def test_a_status_that_is_no_status_is_a_protocol_error(status):
    server, url = await serve(answering(status + b"\r\ncontent-length: 0\r\n\r\n"))
    try:
        with pytest.raises(httpx.RemoteProtocolError, match="bad status line"):
            await asyncio.wait_for(fetch(url, LeanTransport(2, 5, 5)), 10)
    finally:
        server.close()

"""The lean HTTP/1.1 transport under httpx: framing split anywhere, keep-alive, close, errors.

The simulator always frames its bodies the same way; these cases need a server that splits chunked
framing at arbitrary bytes, so a raw asyncio server on 127.0.0.1 plays that part.
"""

import asyncio

import httpx
import pytest

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

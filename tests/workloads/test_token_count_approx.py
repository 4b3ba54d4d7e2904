"""A server that sends no token counts (no ``usage`` per chunk, as servers without
``continuous_usage_stats`` stream): the client counts chunks, its last resort, and every rate built on
that says "approx": the window engine, `ddtune load`'s status lines and its --json summary.

A raw asyncio server on 127.0.0.1 plays that server (the simulator always sends the counts)."""

import asyncio
import json
import threading

import pytest

from tests.helpers import run_ddtune
from workloads.client.stream import StreamingClient
from workloads.live.load import LoadEngine
from workloads.grading.problems import load_problems, select_problems

CHUNKS = 12


def sse(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = [int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")]
            if length:
                await reader.readexactly(length[0])
            path = head.split(b" ")[1]
            if path == b"/v1/models":
                body = json.dumps({"object": "list", "data": [{"id": "stub"}]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                             % (len(body), body))
            elif path == b"/v1/chat/completions":
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                for _ in range(CHUNKS):   # several tokens per chunk, and no count of them
                    writer.write(chunk(sse({"choices": [{"index": 0, "delta": {"content": "one two three "}}]})))
                    await writer.drain()
                    await asyncio.sleep(0.02)
                writer.write(chunk(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})))
                writer.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nnot found")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


@pytest.fixture
def countless_server():
    """A server in a thread of its own (the ddtune subprocess must reach it while the test waits)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box = {}

    def run():
        asyncio.set_event_loop(loop)
        box["server"] = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    yield f"http://127.0.0.1:{box['server'].sockets[0].getsockname()[1]}"

    async def shut() -> None:  # the server, then the connections it still serves
        box["server"].close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run_coroutine_threadsafe(shut(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def test_chunk_counts_are_approx_in_the_client_and_the_windows(countless_server):
    seen: list[tuple[int, bool]] = []

    async def go():
        async with StreamingClient(countless_server, concurrency=2) as client:
            result = await client.chat([{"role": "user", "content": "hi"}], max_tokens=100,
                                       on_tokens=lambda n, exact: seen.append((n, exact)))
            engine = LoadEngine.for_problems(client, select_problems(load_problems(), ["fib"]), concurrency=2,
                                             grade=False, roll_s=1.0)
            stats = await engine.run(2.5)
            return result, stats, list(engine.windows.closed)

    result, stats, windows = asyncio.run(go())
    assert result.ok and result.output_tokens == CHUNKS      # one token per chunk: all it can do
    assert seen and all(not exact for _, exact in seen) and sum(n for n, _ in seen) == CHUNKS
    assert stats.window_1s.approx and stats.window_roll.approx
    assert len(windows) >= 2 and all(w.approx and w.to_json()["approx"] for w in windows)


def test_ddtune_load_says_approx(countless_server, state_dir):
    out = run_ddtune("load", "--url", countless_server, "--concurrency", "2", "--duration", "2.5", "--window", "1",
                     "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["token_count"] == "approx" and doc["window_s"] == 1
    assert doc["windows"] and all(w.get("approx") is True for w in doc["windows"])
    text = run_ddtune("load", "--url", countless_server, "--concurrency", "2", "--duration", "2.5", timeout=60)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines and all("approx: counted by chunks" in line for line in lines), lines

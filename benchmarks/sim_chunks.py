"""How many streamed chunks per second the simulator serves: 64 concurrent chat streams, --sim-step-ms 0.

Starts ``python -m backends.sim`` (plain server, no pacing) on a free port, then runs ROUNDS rounds of
64 concurrent streaming ``/v1/chat/completions`` requests with ``ignore_eos`` over raw asyncio sockets
(keep-alive, minimal parsing) so the client is not the bottleneck. Prints chunks/s and tokens/s.

    python benchmarks/sim_chunks.py [--streams 64] [--tokens 2000] [--rounds 3] [--spec]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def one_stream(port: int, body: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
    writer.write(head + body)
    chunks = 0
    buf = b""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            break
        buf += data
        chunks += data.count(b"data: ")
        if buf.endswith(b"0\r\n\r\n") and b"data: [DONE]" in buf[-64:]:
            break
        buf = buf[-64:]
    writer.close()
    return chunks - 1  # [DONE] is not a chunk


async def round_(port: int, streams: int, tokens: int) -> tuple[int, float]:
    body = json.dumps({"messages": [{"role": "user", "content": "benchmark"}], "stream": True,
                       "max_tokens": tokens, "ignore_eos": True}).encode()
    t0 = time.perf_counter()
    counts = await asyncio.gather(*(one_stream(port, body) for _ in range(streams)))
    return sum(counts), time.perf_counter() - t0


def wait_ready(proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if b"ready to roll" in log.read_bytes():
            return
        if proc.poll() is not None:
            raise SystemExit(f"simulator exited: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    raise SystemExit("simulator not ready in 60 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=2000, help="max_tokens per stream (ignore_eos)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spec", action="store_true", help="run the simulator with DFLASH (several tokens per chunk)")
    opts = ap.parse_args()
    port = free_port()
    argv = [sys.executable, "-m", "backends.sim", "--model-path", "bench", "--port", str(port),
            "--sim-step-ms", "0", "--sim-load-seconds", "0", "--max-running-requests", str(opts.streams)]
    if opts.spec:
        argv += ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d"]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"sim_chunks_{port}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        wait_ready(proc, log)
        best = 0.0
        for i in range(opts.rounds):
            chunks, secs = asyncio.run(round_(port, opts.streams, opts.tokens))
            rate = chunks / secs
            best = max(best, rate)
            print(f"round {i + 1}: {chunks} chunks in {secs:.2f} s = {rate:,.0f} chunks/s")
        print(f"simulator max: {best:,.0f} chunks/s over {opts.streams} concurrent streams (--sim-step-ms 0)")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

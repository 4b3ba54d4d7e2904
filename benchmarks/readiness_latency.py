"""How long after the server can generate does ddtune declare it ready, and what do probes cost?

Starts the simulator N times through a ServerSession (the real restart path). A side poller sends a
1-token /generate every 20 ms from launch to find the moment the server can first generate; ddtune's
own readiness is when ``restart()`` returns. The lag splits into detection (can generate -> ddtune's
own probe generation came back) and bookkeeping (/server_info, the knob check, server.json). Also
prints how many 1-token probes ddtune sent per start (target: at most one per second). Run from the
repository root:

    python benchmarks/readiness_latency.py [--runs 5] [--load-seconds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def first_generation(url: str, stop: asyncio.Event) -> float | None:
    import httpx

    async with httpx.AsyncClient(trust_env=False) as client:
        while not stop.is_set():
            try:
                r = await client.post(f"{url}/generate", timeout=5, json={
                    "text": "x", "sampling_params": {"max_new_tokens": 1}})
                if r.status_code == 200:
                    return time.monotonic()
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.02)
    return None


async def one_run(load_seconds: float) -> tuple[float, float, float, int, float]:
    from backends.knobs.config import ServerConfig
    from backends.server import Phase
    from backends.server import ServerSession

    port = free_port()
    config = ServerConfig(port=port, extra_args=("--sim-load-seconds", str(load_seconds)), ready_timeout_s=120)
    session = ServerSession(config, stream_log=False)
    stop = asyncio.Event()
    poller = asyncio.create_task(first_generation(config.base_url, stop))
    try:
        state = await session.restart()
        ready_at = time.monotonic()
        stop.set()
        can_generate_at = await poller
        probing = (state.ready_at or time.time()) - state.started_at
        await session.stop()
    finally:
        await session.close()
    if state.phase != Phase.READY or can_generate_at is None:
        raise SystemExit(f"run failed: {state.reason}")
    detect = (session.probe_ok_at or ready_at) - can_generate_at
    bookkeeping = (session.settled_at or ready_at) - (session.probe_ok_at or ready_at)
    return ready_at - can_generate_at, detect, bookkeeping, session.probe_count, probing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load-seconds", type=float, default=2.0)
    args = parser.parse_args()
    os.environ.setdefault("DDTUNE_STATE_DIR", tempfile.mkdtemp(prefix="ddtune-bench-"))
    lags, detects, books, probes, spans = [], [], [], [], []
    for i in range(args.runs):
        lag, detect, book, count, span = asyncio.run(one_run(args.load_seconds))
        lags.append(lag)
        detects.append(detect)
        books.append(book)
        probes.append(count)
        spans.append(span)
        print(f"run {i + 1}: ready {lag * 1000:7.1f} ms after the server could generate "
              f"(detection {detect * 1000:6.1f} ms + bookkeeping {book * 1000:5.1f} ms); "
              f"{count} probe generation(s) over a {span:.1f} s start")

    def ms(xs: list[float]) -> str:
        return f"median {statistics.median(xs) * 1000:.1f} ms, range {min(xs) * 1000:.1f}-{max(xs) * 1000:.1f} ms"

    print(f"ready lag: {ms(lags)} (target < 1000 ms)")
    print(f"  detection (can generate -> our probe's token back): {ms(detects)}")
    print(f"  bookkeeping (/server_info, knob check, server.json): {ms(books)}")
    print(f"probe cost: {statistics.median(probes):.0f} one-token generation(s) per start (median), "
          f"at most 1 per second by construction (ReadinessProbe.min_interval=1.0)")


if __name__ == "__main__":
    main()

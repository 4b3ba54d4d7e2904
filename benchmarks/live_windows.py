"""How well the live load's windows tell the truth, on the DFLASH simulator (8 streams by default).

    python benchmarks/live_windows.py                  # 60 s of load
    python benchmarks/live_windows.py --seconds 120 --streams 32

Prints two figures (the tests hold the thresholds: tests/workloads/test_live_windows_sim.py):
- the client's rolling 5 s tok/s (workloads/live/windows.py, as the console plots it) against the
  server's own `Decode batch` gen throughput over the same 5 s, at every server line once the load
  is steady: the mean and the largest difference;
- the closed 5 s windows (`ddtune load --json`'s "windows") against the run's overall tok/s: the
  largest difference after the first window (which holds the ramp-up).
The server's line comes through the console's own parts: a ServerSession following the log.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


async def main(args: argparse.Namespace) -> None:
    from backends.knobs.config import ServerConfig
    from backends.server import Phase, ServerSession
    from backends.server import DecodeStats
    from workloads.client.stream import StreamingClient
    from workloads.live.windows import server_rate
    from workloads.live.load import LoadEngine
    from workloads.grading.problems import load_problems

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ServerConfig(port=port, extra_args=("--sim-load-seconds", "0.5"), knobs={"window": 2048},
                          ready_timeout_s=120)
    session = ServerSession(config)
    lines: list[tuple[float, float]] = []
    client_at: list[tuple[float, float]] = []
    holder: list[LoadEngine] = []

    def on_event(event) -> None:
        if isinstance(event, DecodeStats) and event.gen_throughput is not None:
            lines.append((event.t, event.gen_throughput))
            engine = holder[0] if holder else None
            if engine is not None and engine.ended_at is None and event.t - engine.started_at >= args.steady_after:
                client_at.append((event.t, engine.windows.rate(event.t, 5.0).tokens_per_s))

    session.subscribe(on_event)
    try:
        state = await session.up()
        if state.phase != Phase.READY:
            raise SystemExit(f"the simulator did not start: {state.reason}")
        async with StreamingClient(state.url, concurrency=args.streams) as client:
            engine = LoadEngine.for_problems(client, load_problems(), concurrency=args.streams, max_tokens=1024,
                                             grade=False)
            holder.append(engine)
            stats = await engine.run(args.seconds)
    finally:
        await session.stop()
        await session.close()
    diffs = []
    for t, client_rate in client_at:
        server = server_rate(lines, t - 5.0, t)
        if server:
            diffs.append(client_rate / server - 1)
    overall = stats.output_tokens / stats.elapsed_s
    windows = list(engine.windows.closed)
    off = [w.tok_s / overall - 1 for w in windows[1:]]
    print(f"{args.seconds:g} s, {args.streams} streams, DFLASH simulator: {stats.output_tokens} tokens, "
          f"{overall:.1f} tok/s overall")
    if diffs:
        print(f"client 5 s vs server line over the same 5 s, at {len(diffs)} server lines after "
              f"{args.steady_after:g} s: mean {100 * sum(abs(d) for d in diffs) / len(diffs):.2f}%, "
              f"largest {100 * max(abs(d) for d in diffs):.2f}%")
    if off:
        print(f"closed 5 s windows vs overall ({len(windows)} windows, first left out): largest "
              f"{100 * max(abs(d) for d in off):.2f}%; first window {100 * (windows[0].tok_s / overall - 1):+.1f}%")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--steady-after", type=float, default=8.0, help="seconds of load before comparing")
    os.environ.setdefault("DDTUNE_STATE_DIR", tempfile.mkdtemp(prefix="ddtune-windows-"))
    asyncio.run(main(parser.parse_args()))

"""The acceptance-collapse guard on the simulator: how soon it fires when the drafter stops
helping, and that it stays quiet on a healthy one.

    python benchmarks/collapse_alarm.py                          # healthy drafter, 10 minutes, 8 streams
    python benchmarks/collapse_alarm.py --acceptance 1.0 --minutes 1   # forced collapse: time to alarm

A ServerSession starts the simulator (DFLASH) in a private state dir and a LoadProcess keeps the
coding load on it; every AlarmRaised/AlarmCleared the session emits is printed with its time since
the load started. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


async def main(args: argparse.Namespace) -> None:
    from backends.knobs.config import ServerConfig
    from backends.server import Phase, ServerSession
    from backends.server import AlarmCleared, AlarmRaised, DecodeStats
    from workloads.live.proc import LoadProcess

    extra = ["--sim-load-seconds", "0.5"] + (["--sim-acceptance", str(args.acceptance)] if args.acceptance else [])
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = ServerConfig(port=port, extra_args=tuple(extra), knobs={"window": 2048}, ready_timeout_s=120)
    session = ServerSession(config)
    seen: list[tuple[float, str]] = []
    accepts: list[float] = []
    t0 = [time.monotonic()]

    def on_event(event) -> None:
        if isinstance(event, AlarmRaised):
            seen.append((time.monotonic() - t0[0], f"RAISED: {event.alarm.message}"))
            print(f"{seen[-1][0]:7.1f} s  {seen[-1][1]}", flush=True)
        elif isinstance(event, AlarmCleared):
            seen.append((time.monotonic() - t0[0], "cleared"))
            print(f"{seen[-1][0]:7.1f} s  cleared", flush=True)
        elif isinstance(event, DecodeStats) and event.accept_len is not None:
            accepts.append(event.accept_len)

    session.subscribe(on_event)
    state = await session.up()
    if state.phase != Phase.READY:
        raise SystemExit(f"the simulator did not start: {state.reason}")
    load = LoadProcess()
    await load.start(state.url, None, args.streams, 256)
    t0[0] = time.monotonic()
    try:
        await asyncio.sleep(args.minutes * 60)
    finally:
        await load.stop("stopped")
        await session.stop()
        await session.close()
    raised = [t for t, what in seen if what.startswith("RAISED")]
    lo = min(accepts) if accepts else float("nan")
    print(f"\n{args.minutes:g} min, {args.streams} streams, simulator acceptance "
          f"{'forced ' + str(args.acceptance) if args.acceptance else 'default'}: {len(accepts)} decode lines, "
          f"acceptance min {lo:.2f}; alarms raised: {len(raised)}"
          + (f", first after {raised[0]:.1f} s of load" if raised else ""))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--acceptance", type=float, default=None, help="force the simulator's acceptance")
    os.environ.setdefault("DDTUNE_STATE_DIR", tempfile.mkdtemp(prefix="ddtune-alarm-"))
    asyncio.run(main(parser.parse_args()))

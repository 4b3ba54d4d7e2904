"""Client overhead: streamed chunks/s and client CPU, ddtune's StreamingClient vs a minimal aiohttp loop.

Starts ``python -m backends.sim --sim-step-ms 0`` (no pacing: the server streams as fast as it can),
then runs each client in its own process, alternating, for the same time at the same concurrency,
each keeping C chat requests in flight (ignore_eos, fixed max_tokens) and reading every SSE chunk
as JSON. Prints chunks/s, tokens/s and CPU seconds per 10k chunks for each. Nothing is asserted.

    python benchmarks/client_overhead.py [--concurrency 64] [--seconds 8] [--rounds 2] [--max-tokens 512]

The reference is a minimal aiohttp loop (SGLang's bench_serving needs an sglang install, absent
here); it does the least work a correct streaming client can: split lines, json.loads each chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROMPT = "Write a Python function `fib(n: int) -> int` returning the n-th Fibonacci number."


async def ddtune_worker(url: str, concurrency: int, seconds: float, max_tokens: int) -> dict:
    sys.path.insert(0, str(REPO))
    from workloads.client.stream import StreamingClient

    stats = {"requests": 0, "chunks": 0, "tokens": 0, "errors": 0}
    async with StreamingClient(url, concurrency=concurrency) as client:
        await client.model_id()
        end = time.perf_counter() + seconds

        async def loop():
            while time.perf_counter() < end:
                r = await client.chat([{"role": "user", "content": PROMPT}], max_tokens=max_tokens,
                                      extra={"ignore_eos": True})
                stats["requests"] += 1
                stats["chunks"] += r.chunks
                stats["tokens"] += r.output_tokens
                stats["errors"] += not r.ok
        await asyncio.gather(*(loop() for _ in range(concurrency)))
    return stats


async def aiohttp_worker(url: str, concurrency: int, seconds: float, max_tokens: int) -> dict:
    import aiohttp

    stats = {"requests": 0, "chunks": 0, "tokens": 0, "errors": 0}
    body = {"model": "default", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": max_tokens,
            "stream": True, "ignore_eos": True, "stream_options": {"include_usage": True}}
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=None)) as session:
        end = time.perf_counter() + seconds

        async def loop():
            while time.perf_counter() < end:
                ok = False
                async with session.post(url + "/v1/chat/completions", json=body) as resp:
                    async for line in resp.content:
                        if not line.startswith(b"data:"):
                            continue
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            ok = True
                            break
                        obj = json.loads(data)
                        stats["chunks"] += 1
                        if obj.get("usage"):
                            stats["tokens"] += obj["usage"]["completion_tokens"]
                stats["requests"] += 1
                stats["errors"] += not ok
        await asyncio.gather(*(loop() for _ in range(concurrency)))
    return stats


def run_worker(kind: str, url: str, concurrency: int, seconds: float, max_tokens: int) -> None:
    fn = ddtune_worker if kind == "ddtune" else aiohttp_worker
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    stats = asyncio.run(fn(url, concurrency, seconds, max_tokens))
    r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    stats.update(wall_s=wall, cpu_s=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    print(json.dumps(stats))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--worker", choices=["ddtune", "aiohttp"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        run_worker(args.worker, args.url, args.concurrency, args.seconds, args.max_tokens)
        return
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    sim = subprocess.Popen([sys.executable, "-m", "backends.sim", "--model-path", "demo", "--port", str(port),
                            "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d",
                            "--sim-step-ms", "0", "--sim-load-seconds", "0.5", "--max-running-requests", "256"],
                           cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        print(f"server: simulator --sim-step-ms 0 at {url}; concurrency {args.concurrency}, "
              f"{args.seconds:g} s per run, max_tokens {args.max_tokens}, {os.cpu_count()} CPUs")
        print(f"{'client':<8} {'round':>5} {'chunks/s':>10} {'tokens/s':>10} {'req':>6} {'err':>4} "
              f"{'client CPU %':>12} {'CPU s/10k chunks':>17}")
        totals: dict[str, list[float]] = {"ddtune": [], "aiohttp": []}
        for rnd in range(1, args.rounds + 1):
            for kind in ("ddtune", "aiohttp") if rnd % 2 else ("aiohttp", "ddtune"):
                out = subprocess.run([sys.executable, __file__, "--worker", kind, "--url", url,
                                      "--concurrency", str(args.concurrency), "--seconds", str(args.seconds),
                                      "--max-tokens", str(args.max_tokens)], env=env, capture_output=True,
                                     text=True, timeout=args.seconds + 120)
                if out.returncode != 0:
                    print(f"{kind}: worker failed:\n{out.stderr[-2000:]}")
                    continue
                s = json.loads(out.stdout.strip().splitlines()[-1])
                rate = s["chunks"] / s["wall_s"]
                totals[kind].append(rate)
                print(f"{kind:<8} {rnd:>5} {rate:>10.0f} {s['tokens'] / s['wall_s']:>10.0f} {s['requests']:>6} "
                      f"{s['errors']:>4} {100 * s['cpu_s'] / s['wall_s']:>11.0f}% "
                      f"{10000 * s['cpu_s'] / max(1, s['chunks']):>17.2f}")
        for kind, rates in totals.items():
            if rates:
                print(f"mean {kind:<8} {sum(rates) / len(rates):>10.0f} chunks/s")
    finally:
        os.killpg(sim.pid, signal.SIGKILL)
        sim.wait()


if __name__ == "__main__":
    main()

"""The window engine on the real DFLASH simulator at 8 streams: `ddtune load --json` windows agree
with the run's overall rate, and the client's rolling 5 s rate agrees with the server's own
`Decode batch` throughput over the same 5 s. (The figures themselves: benchmarks/live_windows.py.)"""

import asyncio
import json
from pathlib import Path

import pytest

from tests.helpers import run_ddtune
from tests.workloads.sim_args import SPEC
from workloads.client.stream import StreamingClient
from workloads.live.load import LoadEngine
from workloads.grading.problems import load_problems
from workloads.live.windows import server_rate


def test_load_json_windows_agree_with_the_overall_rate(start_sim, state_dir):
    sim = start_sim(*SPEC)  # the performance model paces the steps, as a real server would
    # 3 s windows (not the default 5) keep the run short; 256-token answers finish in every window
    out = run_ddtune("load", "--url", sim.url, "--concurrency", "8", "--duration", "13", "--max-tokens", "256",
                     "--window", "3", "--json", timeout=150)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    windows, overall = doc["windows"], doc["output_tok_s"]
    assert doc["token_count"] == "exact" and doc["window_s"] == 3
    assert [w["t_s"] for w in windows] == [3.0, 6.0, 9.0, 12.0]
    assert all(w["acceptance"] is not None and w["acceptance"] > 1 for w in windows), windows
    off = [abs(w["tok_s"] / overall - 1) for w in windows[1:]]
    assert max(off) < 0.10, (overall, windows)
    stored = json.loads((Path(doc["run_dir"]) / "run.json").read_text())
    assert stored["summary"]["windows"] == windows


async def _client_and_server(duration_s: float, steady_after_s: float) -> list[tuple[float, float]]:
    """(client 5 s rate, server line over the same 5 s) at each server line after the ramp-up:
    the console's own parts, a ServerSession running the DFLASH simulator and the load's engine."""
    from backends.knobs.config import ServerConfig
    from backends.server.session import ServerSession
    from backends.server.events import DecodeStats
    from tests.helpers import free_port

    # a Decode batch line every 20 steps (SGLang's default is 40): enough pairs after the ramp-up in a short run
    config = ServerConfig(port=free_port(), extra_args=("--sim-load-seconds", "0.1", "--decode-log-interval", "20"),
                          knobs={"window": 2048}, ready_timeout_s=60)
    session = ServerSession(config)
    lines: list[tuple[float, float]] = []
    client_at: list[tuple[float, float]] = []   # the client's 5 s rate as each server line arrived
    engine: LoadEngine | None = None

    def on_event(event) -> None:
        if isinstance(event, DecodeStats) and event.gen_throughput is not None:
            lines.append((event.t, event.gen_throughput))
            if engine is not None and engine.ended_at is None and event.t - engine.started_at >= steady_after_s:
                client_at.append((event.t, engine.windows.rate(event.t, 5.0).tokens_per_s))

    session.subscribe(on_event)
    try:
        state = await session.up()
        assert state.phase == "ready", state
        async with StreamingClient(state.url, concurrency=8) as client:
            engine = LoadEngine.for_problems(client, load_problems(), concurrency=8, max_tokens=1024, grade=False)
            await engine.run(duration_s)
    finally:
        await session.stop()
        await session.close()
    pairs = []
    for t, rate in client_at:
        server = server_rate(lines, t - 5.0, t)
        if server is not None:
            pairs.append((rate, server))
    return pairs


def test_client_rolling_rate_agrees_with_the_server_line(state_dir, groups):
    pairs = asyncio.run(_client_and_server(duration_s=12.0, steady_after_s=7.0))
    assert len(pairs) >= 5, pairs
    for client, server in pairs:
        assert client == pytest.approx(server, rel=0.05), pairs

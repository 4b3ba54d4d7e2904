"""`ddtune bench` traffic against the simulator: arrivals at a request rate are the seeded Poisson
stream (the send times it recorded are arrival_offsets' own), a cell sharing the server with someone
else's load is marked contended and one that did not is not, and degenerate loops are counted."""

import asyncio
import json
import threading
from pathlib import Path

from tests.helpers import run_ddtune
from tests.workloads.sim_args import SPEC
from workloads.bench.arrivals import arrival_offsets, cell_seed
from workloads.bench.plan import CellKey
from workloads.client.stream import StreamingClient


def _bench(sim, tmp_path, *extra):
    out_file = tmp_path / "bench.json"
    out = run_ddtune("bench", "--url", sim.url, "--warmup", "0", "--out", str(out_file), *extra, timeout=240)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out_file.read_text())
    text = (Path(doc["run"]["dir"]) / "responses.jsonl").read_text()
    responses = [json.loads(line) for line in text.splitlines()]
    return out, doc, responses


def test_a_rate_cell_sends_at_the_seeded_arrival_times(start_sim, state_dir, tmp_path):
    sim = start_sim(*SPEC, "--sim-step-ms", "0")
    out, doc, responses = _bench(sim, tmp_path, "--prompts", "story", "--request-rate", "40", "--concurrency", "4",
                                 "--requests-per-cell", "12", "--max-tokens", "8", "--seed", "5",
                                 "--slo", "ttft_ms=2000")
    (cell,) = doc["cells"]
    assert cell["request_rate"] == 40.0 and cell["burstiness"] == 1.0 and cell["requests"] == 12
    expected = arrival_offsets(12, 40.0, 1.0, cell_seed(5, CellKey(0, 4, "story", 40.0)))
    assert sorted(r["scheduled_s"] for r in responses) == expected
    assert doc["run"]["plan"]["request_rates"] == [40.0] and doc["run"]["plan"]["seed"] == 5
    assert cell["req_s"] > 0 and cell["goodput"]["slo"] == {"ttft_ms": 2000.0}
    assert "rate" in out.stdout.splitlines()[0] and "goodput" in out.stdout.splitlines()[0]


def _foreign_load(url, stop: threading.Event) -> threading.Thread:
    """Another client keeping two requests in flight until ``stop``."""
    async def loop():
        async with StreamingClient(url) as client:
            async def one():
                while not stop.is_set():
                    await client.chat([{"role": "user", "content": "someone else's question"}], max_tokens=64)
            await asyncio.gather(one(), one())

    thread = threading.Thread(target=lambda: asyncio.run(loop()), daemon=True)
    thread.start()
    return thread


def test_a_cell_with_foreign_traffic_is_marked_contended(start_sim, state_dir, tmp_path):
    sim = start_sim(*SPEC, "--sim-step-ms", "5", "--enable-metrics")
    argv = ("--prompts", "story", "--contexts", "0", "--concurrency", "2", "--requests-per-cell", "4",
            "--max-tokens", "40")
    out, clean, _ = _bench(sim, tmp_path, *argv)
    assert clean["cells"][0]["contended"] is False and clean["cells"][0]["note"] is None
    stop = threading.Event()
    thread = _foreign_load(sim.url, stop)
    try:
        out, shared, _ = _bench(sim, tmp_path, *argv)
    finally:
        stop.set()
        thread.join(timeout=30)
    cell = shared["cells"][0]
    assert cell["contended"] is True and "not ddtune's" in cell["note"]
    assert "CONTENDED story as is c2" in out.stdout
    assert out.stdout.splitlines()[1].split()[-1] == "yes"  # the table's shared column


def test_ignore_eos_is_asked_for_and_its_loops_are_left_out_of_acceptance(start_sim, state_dir, tmp_path):
    log = tmp_path / "received.jsonl"
    sim = start_sim(*SPEC, "--sim-step-ms", "0", "--sim-request-log", str(log))
    out, doc, responses = _bench(sim, tmp_path, "--prompts", "story", "--contexts", "0", "--concurrency", "2",
                                 "--requests-per-cell", "2", "--max-tokens", "600", "--ignore-eos")
    (cell,) = doc["cells"]
    assert doc["run"]["plan"]["ignore_eos"] is True and cell["ignore_eos"] is True
    assert all(json.loads(line).get("ignore_eos") is True for line in log.read_text().splitlines())
    assert cell["degenerate"]["count"] == 2 and cell["hit_max_tokens"]["share"] == 1.0  # the simulator loops
    assert cell["acceptance"] is None or cell["acceptance"]["count"] == 0
    assert all(r["degenerate"] for r in responses)
    assert "ignore_eos ON" in out.stdout

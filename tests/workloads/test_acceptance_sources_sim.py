"""Acceptance where chat carries no spec field (sglang before 0.5.19, as a real 0.5.17 showed):
from the server's /metrics counters, labelled by source, against a simulator imitating 0.5.17."""

import csv
import io
import json

import httpx
import pytest

from backends.logs.acceptance import counter_acceptance, parse_counters
from tests.helpers import run_ddtune
from tests.workloads.sim_args import FAST, SPEC

OLD = ("--sim-version", "0.5.17")
BENCH = ("--contexts", "60", "--concurrency", "4", "--max-tokens", "96", "--requests-per-cell", "8",
         "--warmup", "0", "--json")


def counters(url: str):
    return parse_counters(httpx.get(url + "/metrics", timeout=10).text)


def test_bench_on_0517_takes_acceptance_from_the_counters(start_sim, state_dir):
    sim = start_sim(*SPEC, *FAST, *OLD, "--enable-metrics")
    before = counters(sim.url)
    out = run_ddtune("bench", "--url", sim.url, *BENCH, timeout=120)
    after = counters(sim.url)
    assert out.returncode == 0, out.stderr
    (cell,) = json.loads(out.stdout)["cells"]
    acc = cell["acceptance"]
    assert acc["source"] == "counters" and acc["mean"] is None and acc["count"] == 0
    # the same run as the server counted it (prompt sizing's one-token requests included here)
    assert acc["total"] == pytest.approx(counter_acceptance(before, after), rel=0.03)
    assert acc["total"] > 1.5 and acc["verify_calls"] > 0
    table = run_ddtune("bench", "--url", sim.url, *BENCH[:-1], timeout=120)
    assert table.returncode == 0, table.stderr
    row = table.stdout.splitlines()[1]
    accept = next(i for i, v in enumerate(row.split()) if v.endswith("/-"))  # total/mean: no per-request mean
    assert row.split()[accept + 1] == "counters"  # the "from" column


def test_bench_on_0523_keeps_the_requests_own_figures(start_sim, state_dir):
    sim = start_sim(*SPEC, *FAST, "--enable-metrics")
    out = run_ddtune("bench", "--url", sim.url, *BENCH, timeout=120)
    assert out.returncode == 0, out.stderr
    acc = json.loads(out.stdout)["cells"][0]["acceptance"]
    assert acc["source"] == "request" and acc["count"] == 8 and acc["mean"] > 1.5


def test_plain_server_with_metrics_still_shows_none(start_sim, state_dir):
    sim = start_sim(*FAST, *OLD, "--enable-metrics")
    out = run_ddtune("bench", "--url", sim.url, *BENCH, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cells"][0]["acceptance"] is None


def test_load_on_0517_windows_and_summary_take_the_counters(start_sim, state_dir):
    sim = start_sim(*SPEC, *OLD, "--sim-step-ms", "2", "--enable-metrics")
    out = run_ddtune("load", "--url", sim.url, "--concurrency", "4", "--duration", "3", "--window", "1",
                     "--max-tokens", "128", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    acc = summary["acceptance"]
    assert acc["source"] == "counters" and acc["total"] > 1.5 and acc["verify_calls"] > 0
    measured = [w for w in summary["windows"] if w["acceptance"] is not None]
    assert measured and all(w["acceptance_source"] == "counters" and w["acceptance"] > 1.5 for w in measured)


def test_load_without_metrics_on_0517_has_no_figure_to_invent(start_sim, state_dir):
    sim = start_sim(*SPEC, *OLD, "--sim-step-ms", "2")
    out = run_ddtune("load", "--url", sim.url, "--concurrency", "2", "--duration", "2", "--window", "1",
                     "--max-tokens", "64", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["acceptance"] is None and all(w["acceptance"] is None for w in summary["windows"])


# --- without --enable-metrics: the server log's Decode batch lines (source "log") ------------------
LOGGED = ("--decode-log-interval", "4")  # several decode lines per cell, not only each burst's idle one


def test_bench_on_0517_without_metrics_takes_acceptance_from_the_log(start_sim, state_dir):
    from backends.logs.span import decode_lines, weighted_accept

    sim = start_sim(*SPEC, *FAST, *OLD, *LOGGED)
    out = run_ddtune("bench", "--url", sim.url, "--log", str(sim.log), *BENCH, timeout=120)
    assert out.returncode == 0, out.stderr
    (cell,) = json.loads(out.stdout)["cells"]
    acc = cell["acceptance"]
    assert acc["source"] == "log" and acc["mean"] is None and acc["p50"] is None and acc["count"] == 0
    assert acc["lines"] > 0 and acc["weight"] >= acc["lines"]
    # the server's own decode lines agree: the whole log's weighted accept len (sizing requests are 1 token)
    whole, _, _ = weighted_accept(decode_lines(sim.text().splitlines()))
    assert acc["total"] == pytest.approx(whole, rel=0.15) and acc["total"] > 1.5
    table = run_ddtune("bench", "--url", sim.url, "--log", str(sim.log), *BENCH[:-1], timeout=120)
    assert table.returncode == 0, table.stderr
    row = table.stdout.splitlines()[1]
    accept = next(i for i, v in enumerate(row.split()) if v.endswith("/-"))  # total/mean: no per-request mean
    assert row.split()[accept + 1] == "log"  # the "from" column


def test_bench_without_metrics_nor_log_shows_none(start_sim, state_dir):
    sim = start_sim(*SPEC, *FAST, *OLD, *LOGGED)
    out = run_ddtune("bench", "--url", sim.url, *BENCH, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cells"][0]["acceptance"] is None


def test_plain_server_log_gives_no_acceptance(start_sim, state_dir):
    sim = start_sim(*FAST, *OLD, *LOGGED)
    out = run_ddtune("bench", "--url", sim.url, "--log", str(sim.log), *BENCH, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cells"][0]["acceptance"] is None


def test_load_on_0517_without_metrics_windows_and_summary_take_the_log(start_sim, state_dir):
    sim = start_sim(*SPEC, *OLD, *LOGGED, "--sim-step-ms", "2")
    out = run_ddtune("load", "--url", sim.url, "--log", str(sim.log), "--concurrency", "4", "--duration", "3",
                     "--window", "1", "--max-tokens", "128", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    acc = summary["acceptance"]
    assert acc["source"] == "log" and acc["total"] > 1.5 and acc["weight"] > 0 and "verify_calls" not in acc
    measured = [w for w in summary["windows"] if w["acceptance"] is not None]
    assert measured and all(w["acceptance_source"] == "log" and w["acceptance"] > 1.5 for w in measured)


def test_report_labels_the_counters_acceptance_and_claims_no_per_request_interval(start_sim, state_dir, tmp_path):
    sim = start_sim(*SPEC, *FAST, *OLD, "--enable-metrics")
    out = tmp_path / "bench.json"
    bench = run_ddtune("bench", "--url", sim.url, *BENCH[:-1], "--out", str(out), timeout=120)
    assert bench.returncode == 0, bench.stderr
    md = run_ddtune("report", str(out))
    assert md.returncode == 0, md.stderr
    row = next(line for line in md.stdout.splitlines() if line.startswith("| ") and " ref |" in line)
    assert "(counters)" in row and "±" not in row.split("(counters)")[0].split("|")[-1], row
    assert "not per-request means" in md.stdout
    doc = json.loads(run_ddtune("report", str(out), "--format", "json").stdout)
    (cell,) = doc["cells"]
    assert cell["acceptance_source"] == "counters" and cell["acceptance"]["mean"] > 1.5
    assert cell["acceptance"]["method"] != "requests"
    csv_text = run_ddtune("report", str(out), "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert rows and rows[0]["acceptance_source"] == "counters"


def test_load_on_0523_stops_reading_metrics_once_the_requests_carry_acceptance(start_sim, state_dir):
    """Requests with their own spec fields are the figure: the engine reads /metrics at the start and
    on the ticks before the first of them finished, never after (each read costs the server a page)."""
    import asyncio

    from workloads.client.stream import StreamingClient
    from workloads.grading.problems import load_problems
    from workloads.live.events import RequestDone, StatsUpdated
    from workloads.live.load import LoadEngine

    sim = start_sim(*SPEC, *FAST, "--enable-metrics")
    ticks: list[str] = []  # "tick" per StatsUpdated, "done" at the first finished request

    def on_event(event) -> None:
        if isinstance(event, StatsUpdated):
            ticks.append("tick")
        elif isinstance(event, RequestDone) and "done" not in ticks:
            ticks.append("done")

    async def run():
        async with StreamingClient(sim.url, concurrency=2) as client:
            engine = LoadEngine.for_problems(client, load_problems(), concurrency=2, max_tokens=32, grade=False,
                                             on_event=on_event, roll_s=1.0)
            return await engine.run(4.5)

    stats = asyncio.run(run())
    assert stats.accept_source == "request" and stats.acceptance > 1
    before = ticks.index("done")  # ticks before the first request finished (each read /metrics)
    after = len(ticks) - before - 1
    assert after >= 3  # ticks that would each have read /metrics
    reads = sim.text().count('"GET /metrics HTTP/1.1"')
    assert 1 <= reads <= 1 + before + 1  # the start, the ticks before, and at most one under way then

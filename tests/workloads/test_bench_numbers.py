"""Numbers that agree with SGLang's own tools (issue 13): acceptance only from a speculative
server, the step gap beside bench_serving's per-token ITL, the cell's total acceptance (the
server's definition) used in comparisons, and waves released at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from backends.core.errors import ConfigError
from tests.helpers import free_port, run_ddtune
from tests.workloads.sim_args import SPEC
from workloads.bench.cells import acceptance_stats, cell_stats
from workloads.client.result import RequestResult
from workloads.client.stream import StreamingClient
from workloads.stats.metrics import cell_acceptance
from workloads.runs.provenance import speculative_from_info
from workloads.report.compare import build_report
from workloads.report.inputs import load_inputs
from workloads.sweep.spec import build_plan
from workloads.client.transport import WaveRelease

MSG = [{"role": "user", "content": "Say something."}]


def result(tokens=100, verify=25, itl=(0.03, 0.01, 0.02), per_chunk=(3, 1, 2), speculative=None, accept_len=None):
    return RequestResult(ok=True, error=None, endpoint="chat", started_at=0.0, ttft_s=0.05, itl_s=itl, e2e_s=1.0,
                         output_tokens=tokens, prompt_tokens=60, finish_reason="length", spec_verify_ct=verify,
                         spec_accept_length=accept_len, content="", reasoning_content=None, chunks=5,
                         itl_tokens=per_chunk, speculative=speculative)


def bench(url: str, *extra: str) -> dict:
    out = run_ddtune("bench", "--url", url, "--contexts", "60", "--max-tokens", "48", "--json", *extra, timeout=240)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def responses(run: dict) -> list[dict]:
    return [json.loads(x) for x in (Path(run["dir"]) / "responses.jsonl").read_text().splitlines()]


# --- 1. acceptance only from a speculative server ------------------------------------------

def test_a_non_speculative_server_hides_acceptance_whatever_fields_arrive():
    assert result(speculative=False).acceptance is None and result(speculative=False).verify_steps is None
    assert result(speculative=True).acceptance == 4.0 and result(speculative=None).acceptance == 4.0
    assert result(verify=None, accept_len=2.5, speculative=False).acceptance is None
    assert acceptance_stats([result(speculative=False)]) is None
    assert speculative_from_info({"speculative_algorithm": None}) is False
    assert speculative_from_info({"speculative_algorithm": "DFLASH"}) is True
    assert speculative_from_info(None) is None


def test_client_told_the_server_is_not_speculative_reports_no_acceptance(start_sim):
    sim = start_sim(*SPEC, "--sim-step-ms", "0")  # a server that does send the spec fields

    async def ask(speculative):
        async with StreamingClient(sim.url) as client:
            client.speculative = speculative
            return await client.chat(MSG, max_tokens=40, extra={"ignore_eos": True})

    told_not, unknown = asyncio.run(ask(False)), asyncio.run(ask(None))
    assert told_not.spec_verify_ct and told_not.acceptance is None  # the raw field is kept, not reported
    assert unknown.acceptance == unknown.output_tokens / unknown.spec_verify_ct > 1.0


def test_bench_against_the_plain_simulator_reports_acceptance_null(start_sim, state_dir):
    sim = start_sim("--sim-step-ms", "0")
    doc = bench(sim.url, "--concurrency", "1", "2")
    assert doc["run"]["server"]["speculative"] is False
    assert [c["acceptance"] for c in doc["cells"]] == [None, None]
    assert all(r["spec_verify_ct"] is None for r in responses(doc["run"]))
    table = run_ddtune("report", doc["run"]["dir"], "--format", "json")
    assert table.returncode == 0, table.stderr
    assert all(c["acceptance"] is None for c in json.loads(table.stdout)["cells"])


# --- 2. step gap and per-token ITL ---------------------------------------------------------

def test_itl_per_token_splits_each_gap_over_the_tokens_its_chunk_brought():
    r = result()
    assert r.itl_token_s == [0.01, 0.01, 0.01, 0.01, 0.01, 0.01]
    assert result(per_chunk=()).itl_token_s == [0.03, 0.01, 0.02]  # no counts: one token per chunk
    cell = cell_stats(60, 1, [r], 1.0, None, 0.0)
    assert cell["itl_ms"]["count"] == 3 and cell["itl_ms"]["p50"] == pytest.approx(20.0)
    assert cell["itl_token_ms"]["count"] == 6 and cell["itl_token_ms"]["max"] == pytest.approx(10.0)


def test_dflash_cells_carry_itl_per_token_well_below_the_step_gap(start_sim, state_dir):
    sim = start_sim(*SPEC, "--sim-step-ms", "15")
    doc = bench(sim.url, "--concurrency", "1", "4")
    for c in doc["cells"]:
        gap, tok = c["itl_ms"], c["itl_token_ms"]
        # every token after each request's first chunk has a per-token value; the gaps add up the same
        assert tok["count"] > gap["count"]
        assert tok["mean"] * tok["count"] == pytest.approx(gap["mean"] * gap["count"], rel=1e-9)
        assert tok["mean"] < gap["mean"] / 2 and tok["p50"] < gap["p50"]
    text = run_ddtune("report", doc["run"]["dir"]).stdout
    assert "step gap p50 ms" in text and "ITL/token p50 ms" in text


# --- 3. the cell's total acceptance --------------------------------------------------------

def test_total_is_all_tokens_over_all_verify_steps():
    stats = acceptance_stats([result(100, 25), result(200, 40), result(30, 30)])
    assert stats["total"] == pytest.approx(330 / 95)
    assert stats["mean"] == pytest.approx((4.0 + 5.0 + 1.0) / 3) and stats["count"] == 3
    assert cell_acceptance({"acceptance": stats}) == stats["total"]
    assert cell_acceptance({"acceptance": {"mean": 3.0, "p50": 3.0, "count": 2}}) == 3.0  # older cells
    assert cell_acceptance({"acceptance": None}) is None


def test_bench_cells_carry_total_and_comparisons_use_it(start_sim, state_dir, tmp_path):
    sim = start_sim(*SPEC, "--sim-step-ms", "0")
    doc = bench(sim.url, "--concurrency", "4", "--requests-per-cell", "12", "--max-tokens", "200")
    (cell,) = doc["cells"]
    kept = [r for r in responses(doc["run"]) if r["ok"]]
    want = sum(r["output_tokens"] for r in kept) / sum(r["spec_verify_ct"] for r in kept)
    assert cell["acceptance"]["total"] == pytest.approx(want)
    assert cell["acceptance"]["total"] != cell["acceptance"]["mean"]
    report = build_report(load_inputs([doc["run"]["dir"]]))
    assert report.rows[0].acceptance.mean == pytest.approx(want)


# --- 4. wave release -----------------------------------------------------------------------

def test_waves_leave_together_and_the_run_records_the_release(start_sim, state_dir):
    sim = start_sim(*SPEC, "--sim-step-ms", "5")
    doc = bench(sim.url, "--concurrency", "4", "--requests-per-cell", "12")
    assert doc["run"]["plan"]["release"] == "wave"
    spans = sorted((r["started_at"], r["started_at"] + r["e2e_s"]) for r in responses(doc["run"]))
    waves = [spans[i:i + 4] for i in range(0, 12, 4)]
    for before, after in zip(waves, waves[1:], strict=False):
        # no request of a wave leaves before the whole previous wave has come back
        assert min(s for s, _ in after) >= max(e for _, e in before) - 0.0005
    staggered = bench(sim.url, "--concurrency", "4", "--requests-per-cell", "12", "--release", "staggered")
    assert staggered["run"]["plan"]["release"] == "staggered"
    assert "requests released: staggered" in run_ddtune("bench", "--resume", staggered["run"]["dir"],
                                                        "--url", sim.url).stdout


def test_a_plan_file_may_choose_the_release_and_a_typo_is_refused(tmp_path):
    good = tmp_path / "plan.toml"
    good.write_text('[bench]\nrelease = "staggered"\n')
    assert build_plan(["b8-t4-w2048"], plan_file=str(good)).bench.release == "staggered"
    assert build_plan(["b8-t4-w2048"]).bench.release == "wave"
    bad = tmp_path / "bad.toml"
    bad.write_text('[bench]\nrelease = "burst"\n')
    with pytest.raises(ConfigError, match="release must be one of wave, staggered"):
        build_plan(["b8-t4-w2048"], plan_file=str(bad))


def test_a_request_that_cannot_connect_does_not_hold_its_wave_back(start_sim):
    sim = start_sim(*SPEC, "--sim-step-ms", "0")
    dead = f"http://127.0.0.1:{free_port()}"

    async def wave():
        release = WaveRelease(3)
        async with StreamingClient(sim.url) as live, StreamingClient(dead) as gone:
            assert await live.warm(2) == 2
            got = await asyncio.wait_for(asyncio.gather(
                live.chat(MSG, max_tokens=8, release=release), gone.chat(MSG, max_tokens=8, release=release),
                live.chat(MSG, max_tokens=8, release=release)), timeout=60)
        return release, got

    release, (a, lost, b) = asyncio.run(wave())
    assert a.ok and b.ok and lost.unreachable and release.released_at is not None
    assert a.started_at == b.started_at == release.released_at[1]  # times count from the wave's release


def test_bench_flags_a_collapsed_drafter_and_not_a_plain_server(start_sim, state_dir):
    """Issue 13, item 7: a speculative server at ~1.0 tokens per verify step is flagged in the cell
    and the table; a plain server's null acceptance never is; a healthy drafter neither."""
    for args, flagged in (((*SPEC, "--sim-acceptance", "1.0"), True), ((*SPEC,), False), ((), False)):
        sim = start_sim(*args, "--sim-step-ms", "0")
        doc = bench(sim.url, "--concurrency", "2")
        assert [c["alarms"] for c in doc["cells"]] == [["acceptance_collapse"] if flagged else []], args
        table = run_ddtune("bench", "--url", sim.url, "--contexts", "60", "--concurrency", "1",
                           "--requests-per-cell", "2", "--max-tokens", "32", "--warmup", "0")
        assert table.returncode == 0, table.stderr
        assert ("ALARM acceptance_collapse in ctx 60 c1" in table.stdout) == flagged, table.stdout

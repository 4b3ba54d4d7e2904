"""parse_line on every branch of SGLang's own ``Decode batch`` / ``Prefill batch`` format strings
(0.5.19 and 0.5.23 wheels, transcribed in tests/data/real/<version>/batch_log_format.toml; the lines
are built by tests/batchlines.py): each line gives the right event with the right fields, with and
without the ``[N]`` of SGLANG_LOG_FORWARD_ITERS, and burst-closing lines still read as idle."""

from __future__ import annotations

import pytest

from backends.logs.events import DecodeBatch, PrefillBatch
from backends.logs.parse import parse_line
from tests.batchlines import VERSIONS, lines, render

T = "2026-11-30 09:00:08"


def _r(x: object) -> float:
    return float(f"{x:.2f}")


def expected_decode(on: frozenset[str], v: dict) -> DecodeBatch:
    spec = "spec" in on
    hisparse_only = "hisparse" in on and not on & {"swa", "ssm"}  # no #token, no #full token: the device pool
    return DecodeBatch(
        v["num_running_reqs"], v["hisparse_device_tokens" if hisparse_only else "full_num_used"],
        _r(v["hisparse_device_token_usage" if hisparse_only else "full_token_usage"]),
        _r(v["spec_accept_length"]) if spec else None, _r(v["spec_accept_rate"]) if spec else None,
        v["can_run_cuda_graph"], _r(v["last_gen_throughput"]), v["queue_reqs"],
        v["swa_num_used"] if "swa" in on else None, _r(v["swa_token_usage"]) if "swa" in on else None,
        v["batch_iter"] if "iter" in on else None,
        _r(v["spec_cap_length"]) if spec and "cap" in on else None,
        _r(v["spec_block_accept_length"]) if spec and "block" in on else None, ts=T,
    )


def expected_prefill(on: frozenset[str], v: dict) -> PrefillBatch:
    return PrefillBatch(
        v["num_new_seqs"], v["log_input_tokens"], v["log_hit_tokens"], _r(v["full_token_usage"]),
        v["num_running_reqs"], v["queue_reqs"], v["can_run_cuda_graph"], _r(v["last_input_throughput"]),
        v["batch_iter"] if "iter" in on else None, ts=T,
    )


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["decode", "prefill"])
def test_every_branch_of_the_format_reads_to_its_fields(version, kind):
    expected = expected_decode if kind == "decode" else expected_prefill
    count = 0
    for on, values, line in lines(version, kind):
        got = parse_line(f"[{T}] {line}")
        assert got == expected(on, values), (sorted(on), line)
        # the same line through Python logging's own prefix, as SGLang's configure_logger writes it
        assert parse_line(f"[{T}] INFO metrics_reporter.py:1071: {line}") == got
        count += 1
    assert count >= 128


@pytest.mark.parametrize("version", VERSIONS)
def test_burst_closing_decode_lines_read_as_idle(version):
    """``#token: 0`` (or its pool's count) or ``#running-req: 0``: the lines that logslice, alarms and
    the live windows skip, in every pool layout and with the forward-iteration prefix."""
    for on, values, _ in lines(version, "decode"):
        if on & {"cap", "block", "image", "disagg_decode", "mfu", "device_timer"}:
            continue  # the pool, spec and [N] flags are what move the counted fields
        zero_tokens = dict(values, full_num_used=0, hisparse_device_tokens=0)
        zero_running = dict(values, num_running_reqs=0)
        busy = parse_line(render(version, "decode", on, values))
        assert isinstance(busy, DecodeBatch) and not busy.idle, sorted(on)
        for idle_values in (zero_tokens, zero_running):
            event = parse_line(render(version, "decode", on, idle_values))
            assert isinstance(event, DecodeBatch) and event.idle, sorted(on)


def test_decode_batch_with_iteration_reads_where_the_plain_line_did():
    """The issue's line: SGLANG_LOG_FORWARD_ITERS put ``[N]`` before the comma that the old check wanted."""
    line = (f"[{T} TP0] Decode batch [31742], #running-req: 4, #token: 3600, token usage: 0.01, "
            "accept len: 3.52, accept rate: 0.17, cuda graph: True, gen throughput (token/s): 610.40, #queue-req: 0")
    event = parse_line(line)
    assert isinstance(event, DecodeBatch)
    assert (event.forward_iter, event.running_req, event.tokens, event.accept_len, event.gen_throughput) == (
        31742, 4, 3600, 3.52, 610.4)
    assert event.is_lead and event.ranks is not None and event.ranks.tp == 0
    for bad in ("Decode batch [x], #running-req: 4", "Decode batch [12] #running-req: 4",
                "Decode batches, #running-req: 4"):
        assert not isinstance(parse_line(bad), DecodeBatch), bad

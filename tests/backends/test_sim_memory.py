"""The simulator's startup log adds up, as a real server's does: every weight load takes its
``mem usage`` from the free memory, the KV cache takes K + V of every pool, each CUDA graph its
``mem usage``, and the next line starts from the balance the last one left."""

from __future__ import annotations

import asyncio
import io

import pytest

from backends.logs.events import (
    GraphCaptureBegin, GraphCaptureEnd, KvCache, MaxTotalTokens, MemoryPoolEnd, WeightLoadBegin, WeightLoadEnd,
)
from backends.logs.parse import parse_line, split_lines
from backends.sim.args import parse
from backends.sim.logwriter import LogWriter
from backends.sim.startup import Startup

SPEC = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "demo-draft"]


def startup_events(argv: list[str]) -> list:
    err = io.StringIO()
    args = parse(["--model-path", "Qwen/Qwen3-8B", *argv, "--sim-load-seconds", "0"], environ={})
    asyncio.run(Startup(args, LogWriter(err, io.StringIO())).load())
    return [e for e in map(parse_line, split_lines(err.getvalue())) if e is not None]


@pytest.mark.parametrize("argv", [SPEC, [], [*SPEC, "--sim-version", "0.5.11"]], ids=["dflash", "plain", "0.5.11"])
def test_memory_lines_add_up(argv):
    events = startup_events(argv)
    avail = None
    kv_taken = kv_pool = 0.0  # every pool's K + V, and the pool's since the last 'Memory pool end'
    checked = 0
    for e in events:
        if isinstance(e, (WeightLoadBegin, GraphCaptureBegin)):
            if avail is not None:
                assert e.avail_gb == pytest.approx(avail, abs=0.011), e
            avail = e.avail_gb
        elif isinstance(e, (WeightLoadEnd, GraphCaptureEnd)):
            assert e.avail_gb == pytest.approx(avail - e.mem_usage_gb, abs=0.011), e
            avail = e.avail_gb
            checked += 1
        elif isinstance(e, KvCache):
            assert e.k_gb is not None and e.v_gb is not None
            kv_taken += e.k_gb + e.v_gb
            kv_pool += e.k_gb + e.v_gb
        elif isinstance(e, MemoryPoolEnd):
            # available memory after a pool = before minus its K and V (of every KV cache line since the last
            # pool end: real 0.5.17 and 0.5.23 print one 'Memory pool end' per pool), within rounding
            assert e.avail_gb == pytest.approx(avail - kv_pool, abs=0.011)
            assert e.avail_gb > 0
            avail, kv_pool = e.avail_gb, 0.0
            checked += 1
        elif isinstance(e, MaxTotalTokens):
            assert e.available_gpu_mem_gb == pytest.approx(avail, abs=0.011)
            checked += 1
    assert kv_taken > 0 and checked >= 4  # weights, pool end, a graph, max_total_num_tokens

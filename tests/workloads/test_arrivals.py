"""The arrival process of --request-rate, judged statistically with fixed seeds (never by timing), the
degenerate-answer test, and the cell's traffic figures (pure)."""

import math

import pytest

from workloads.bench.arrivals import arrival_offsets, cell_seed
from workloads.bench.cells import traffic_stats
from workloads.bench.plan import CellKey
from workloads.bench.quality import MAX_CHARS, degenerate
from workloads.bench.watch import InFlight, busy, requests_total, summarize_gpus
from workloads.client.result import RequestResult


def _gaps(offsets):
    return [b - a for a, b in zip(offsets, offsets[1:], strict=False)]


def _ks_exponential(gaps, rate):
    """Kolmogorov-Smirnov distance between the gaps and Exp(rate)."""
    data = sorted(gaps)
    n = len(data)
    return max(max((i + 1) / n - (1 - math.exp(-rate * x)), (1 - math.exp(-rate * x)) - i / n)
               for i, x in enumerate(data))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_poisson_arrivals_at_the_asked_rate(seed):
    rate, n = 4.0, 4000
    offsets = arrival_offsets(n, rate, 1.0, seed)
    gaps = _gaps(offsets)
    assert offsets[0] == 0.0 and all(g > 0 for g in gaps)
    mean = sum(gaps) / len(gaps)
    assert mean == pytest.approx(1 / rate, rel=0.05)  # ~6 standard errors at n = 4000
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1))
    assert sd / mean == pytest.approx(1.0, abs=0.08)  # exponential gaps: coefficient of variation 1
    assert _ks_exponential(gaps, rate) < 1.63 / math.sqrt(len(gaps))  # KS at the 1% level
    # counts in 1 s windows: Poisson(4), whose variance equals its mean
    counts = [0] * int(offsets[-1])
    for t in offsets:
        if int(t) < len(counts):
            counts[int(t)] += 1
    m = sum(counts) / len(counts)
    var = sum((c - m) ** 2 for c in counts) / (len(counts) - 1)
    assert m == pytest.approx(rate, rel=0.05) and var / m == pytest.approx(1.0, abs=0.15)


def test_burstiness_is_the_gamma_shape_at_the_same_mean_rate():
    for shape in (0.25, 4.0):
        gaps = _gaps(arrival_offsets(6000, 2.0, shape, 3))
        mean = sum(gaps) / len(gaps)
        sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1))
        assert mean == pytest.approx(0.5, rel=0.06)
        assert sd / mean == pytest.approx(1 / math.sqrt(shape), rel=0.1)


def test_the_same_seed_sends_at_the_same_times_and_cells_differ():
    a = CellKey(0, 8, "story", 2.0)
    assert arrival_offsets(50, 2.0, 1.0, cell_seed(0, a)) == arrival_offsets(50, 2.0, 1.0, cell_seed(0, a))
    assert arrival_offsets(50, 2.0, 1.0, cell_seed(0, a)) != arrival_offsets(50, 2.0, 1.0, cell_seed(1, a))
    assert arrival_offsets(50, 2.0, 1.0, cell_seed(0, a)) != \
        arrival_offsets(50, 2.0, 1.0, cell_seed(0, a._replace(concurrency=4)))


@pytest.mark.parametrize("text, loops", [
    ("and " * 40, True),
    ("The keeper climbed the stairs. " * 30, True),
    ("\n" * 300, True),
    ("def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n" * 2, False),
    (" ".join(f"word{i}" for i in range(200)), False),
    ("Short answer.", False),
])
def test_degenerate_answers(text, loops):
    assert (degenerate(text) is not None) == loops


def test_the_blank_run_rule_and_the_tail_it_reads():
    """The red team's answer: megabytes of 255-blank runs, each a near miss of the 256 rule (a backtracking
    search tried 255 starts in each). Runs of exactly 256 count wherever they begin; only the answer's
    last MAX_CHARS characters are read, so a runaway answer costs bench's event loop a bounded time."""
    near = "".join(f"w{i}" + " " * 255 for i in range(12_000))
    assert degenerate(near) is None
    assert degenerate(" " * 256 + "x") and degenerate("x" + " " * 256 + "y")
    tail = " ".join(f"word{i}" for i in range(MAX_CHARS // 6))  # distinct words, more than MAX_CHARS of them
    assert len(tail) > MAX_CHARS and degenerate("and " * 40 + tail) is None  # its loop lies before the tail read


def _result(ttft, e2e, tokens, reason="stop", prompt=100, ok=True):
    return RequestResult(ok=ok, error=None if ok else "x", endpoint="chat", started_at=0.0, ttft_s=ttft, itl_s=(),
                         e2e_s=e2e, output_tokens=tokens, prompt_tokens=prompt, finish_reason=reason,
                         spec_verify_ct=None, spec_accept_length=None, content="", reasoning_content=None, chunks=1)


def test_traffic_figures_and_goodput():
    results = [_result(0.1, 1.1, 101), _result(0.6, 1.6, 51, "length"), _result(0.2, 4.2, 41),
               _result(0, 1, 0, ok=False)]
    stats = traffic_stats(results, 2.0, [512, 51, 512, 512], {2: "a loop"}, {"ttft_ms": 500, "tpot_ms": 50})
    assert stats["req_s"] == 1.5 and stats["input_tok_s"] == 150 and stats["total_tok_s"] == (300 + 193) / 2
    assert stats["tpot_ms"]["p50"] == pytest.approx(20.0)  # 10 ms, 20 ms, 100 ms per output token
    assert stats["hit_max_tokens"] == {"count": 1, "share": 1 / 3}
    assert stats["degenerate"] == {"count": 1, "why": ["a loop"]}
    # within 500 ms TTFT and 50 ms TPOT: only the first (the second's TTFT and the third's TPOT miss)
    assert stats["goodput"] == {"req_s": 0.5, "share": 1 / 3, "slo": {"ttft_ms": 500, "tpot_ms": 50}}


def test_server_load_readings_are_checked():
    assert busy({"loads": [{"num_running_reqs": 3, "num_waiting_reqs": 1}, {"num_running_reqs": 2}]}) == 6
    assert busy({"loads": [{"num_running_reqs": -1}]}) is None
    assert busy({"loads": [{"num_running_reqs": float("nan")}]}) is None
    assert busy({"loads": "x"}) is None and busy(None) is None
    text = ('sglang:num_requests_total{engine_type="unified",is_streaming="false",model_name="m"} 14.0\n'
            'sglang:num_requests_total{engine_type="unified",is_streaming="true",model_name="m"} 4.0\n')
    assert requests_total(text) == 18.0 and requests_total("") is None


def test_own_requests_count_for_half_a_second_after_they_end():
    now = [0.0]
    flight = InFlight(lambda: now[0])
    flight.enter()
    flight.enter()
    flight.leave()
    assert flight.own() == 2 and flight.finished == 1
    now[0] = 0.6
    assert flight.own() == 1


def test_gpu_readings_per_cell():
    from backends.machine.gpu import GpuSampler
    from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml

    sampler = GpuSampler(nvml=make_fake_nvml([FakeGpu(used=10 * GIB), FakeGpu(used=20 * GIB)]))
    summary = summarize_gpus([sampler.sample(), sampler.sample()])
    assert summary["samples"] == 2 and [d["index"] for d in summary["devices"]] == [0, 1]
    assert summary["devices"][1]["memory_used_max_mib"] == 20 * 1024
    assert summarize_gpus([]) is None

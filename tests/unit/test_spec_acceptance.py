"""The pure parts of acceptance by source: counter deltas, the log-weighted figure, idle decode lines."""

import pytest

from backends.logs.events import DecodeBatch
from backends.logs.parse import parse_line
from backends.logs.acceptance import Acceptance, SpecCounters, counter_acceptance, log_acceptance, parse_counters, pick

# /metrics of the real 0.5.17 server before and after 8 x 256 tokens at accept len 16
# (shared/real-sglang/0.5.17/http/metrics_before.txt, metrics_after.txt; the lines that matter)
M = 'engine_type="unified",model_name="/tmp/t_agree/target"'
BEFORE = f"""# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{engine_type="unified",is_streaming="false",model_name="/tmp/t_agree/target"}} 209.0
sglang:generation_tokens_total{{engine_type="unified",is_streaming="true",model_name="/tmp/t_agree/target"}} 224.0
sglang:spec_accept_length{{{M},moe_ep_rank="0",pp_rank="0",tp_rank="0"}} 5.5
# TYPE sglang:spec_verify_calls_total counter
sglang:spec_verify_calls_total{{{M}}} 34.0
"""
AFTER = BEFORE.replace("} 209.0", "} 2257.0").replace("} 34.0", "} 162.0")


def test_counters_sum_over_label_sets_and_their_delta_is_the_recorded_16():
    before, after = parse_counters(BEFORE), parse_counters(AFTER)
    assert before == SpecCounters(433.0, 34.0) and after == SpecCounters(2481.0, 162.0)
    assert counter_acceptance(before, after) == 16.0  # (2481 - 433) / (162 - 34): the log said 16.00


def test_counter_delta_has_no_figure_without_verify_calls_or_after_a_reset():
    a = SpecCounters(100.0, 10.0)
    assert counter_acceptance(a, a) is None                        # an idle window
    assert counter_acceptance(a, SpecCounters(50.0, 20.0)) is None  # the counters restarted
    assert counter_acceptance(None, a) is None
    assert parse_counters("sglang:generation_tokens_total{} 5.0\n") is None  # no verify counter: not speculative
    assert parse_counters("") is None


def test_log_acceptance_weights_each_line_by_its_running_requests():
    lines = [(1.0, 16.0, 8), (2.0, 2.0, 1), (3.0, None, 4), (4.0, 9.0, 0), (5.0, 3.0, 3)]
    assert log_acceptance(lines, 0.0, 2.0) == pytest.approx((16 * 8 + 2 * 1) / 9)
    assert log_acceptance(lines, 1.0, 5.0) == pytest.approx((2 * 1 + 3 * 3) / 4)  # (lo, hi]: 1.0 left out
    assert log_acceptance(lines, 5.0, 9.0) is None


def test_pick_prefers_the_requests_then_the_counters_then_the_log_and_hides_a_plain_server():
    assert pick(2.5, 3.0, 4.0) == Acceptance(2.5, "request")
    assert pick(None, 3.0, 4.0) == Acceptance(3.0, "counters")
    assert pick(None, None, 4.0).to_json() == {"value": 4.0, "source": "log"}
    assert pick(2.5, 3.0, 4.0, speculative=False) is None
    assert pick(None) is None


@pytest.mark.parametrize("line, idle", [
    ("[2026-12-01 19:43:15] Decode batch, #running-req: 8, #token: 0, token usage: 0.00, accept len: 16.00, "
     "accept rate: 1.00, cuda graph: True, gen throughput (token/s): 22252.76, #queue-req: 0", True),
    ("[2026-12-01 19:43:15] Decode batch, #running-req: 0, #token: 12, token usage: 0.00, "
     "cuda graph: True, gen throughput (token/s): 31691.16, #queue-req: 0", True),
    ("[2026-12-01 19:43:15] Decode batch, #running-req: 8, #token: 7904, token usage: 0.03, accept len: 16.00, "
     "accept rate: 1.00, cuda graph: True, gen throughput (token/s): 22955.48, #queue-req: 0", False),
])
def test_idle_decode_lines_are_known(line, idle):
    event = parse_line(line)
    assert isinstance(event, DecodeBatch) and event.idle is idle

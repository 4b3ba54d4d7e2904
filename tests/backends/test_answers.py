"""backends.core.answers, the one door every HTTP read goes through: against a hostile server of the
tests' own (tests/hostile_http.py) on 127.0.0.1, each answer is read within its bounds and every
failure is an httpx.HTTPError, never a MemoryError, RecursionError, ValueError or OverflowError."""

from __future__ import annotations

import asyncio
import math
import time

import httpx
import pytest

from backends.core.answers import (BadAnswer, StreamLimits, amount, count, fetch, fetch_once, idle_s, dropped_shown,
                                   sse_lines)
from backends.core.plaintext import escaped
from backends.logs.acceptance import parse_counters
from backends.logs.batch import to_float, to_int
from tests.hostile_http import FORGED, HostileServer


@pytest.mark.parametrize(("value", "want"), [
    (3, 3), (3.0, 3), (0, 0), (-1, None), (-3e40, None), (1e400, None), (math.nan, None), (10**400, None),
    (2.5, None), ("7", None), (True, None), (None, None), ([1], None),
])
def test_a_count_is_a_finite_non_negative_plausible_integer(value, want):
    assert count(value) == want


@pytest.mark.parametrize(("value", "want"), [
    (2.5, 2.5), (0, 0.0), (-0.1, None), (-3e40, None), (math.inf, None), (math.nan, None), (10**400, None),
    (5000.0, None), ("2", None), (False, None),
])
def test_an_acceptance_is_finite_non_negative_and_plausible(value, want):
    assert amount(value) == want


def test_a_dropped_value_is_said_short_and_on_one_line():
    assert dropped_shown(10**400) == "10000000000000000000... (401 digits)"
    assert dropped_shown(-7) == "-7" and dropped_shown(math.nan) == "nan" and dropped_shown("a\nb") == "'a\\nb'"


def test_escaped_keeps_a_value_on_its_line():
    assert escaped(f"2048\n{FORGED}\r\t\x1b[31m\u202e") == f"2048\\n{FORGED}\\r\\t\\x1b[31m\\u202e"
    text = "plain text, ünïcödé 漢字"
    assert escaped(text) is text


@pytest.mark.parametrize(("raw", "want"), [("2", 2.0), ("0.5", 0.5), ("0", 5.0), ("-1", 5.0), ("abc", 5.0),
                                          ("nan", 5.0), ("inf", 5.0), ("", 5.0)])
def test_the_idle_limit_comes_from_the_environment_when_it_is_a_positive_number(monkeypatch, raw, want):
    monkeypatch.setenv("DDTUNE_IDLE_S", raw)
    assert idle_s(5.0) == want


@pytest.mark.parametrize(("behaviour", "error", "says"), [
    ("bomb", BadAnswer, "larger than 8 MiB"),
    ("endless", BadAnswer, "larger than 8 MiB"),
    ("huge-chunk", BadAnswer, "larger than 8 MiB"),
    ("trickle", httpx.ReadTimeout, "no whole answer within 2 s"),
    ("slow-trickle", httpx.ReadTimeout, ""),
    ("bad-length", httpx.RemoteProtocolError, ""),
])
async def test_a_whole_answer_ends_within_its_bounds(behaviour, error, says):
    with HostileServer({"/server_info": behaviour}) as server:
        started = time.monotonic()
        with pytest.raises(error) as caught:
            await fetch_once(f"{server.url}/server_info", idle=1.0)
        took = time.monotonic() - started
    assert says in str(caught.value)
    assert took < 2 * 1.0 + 3  # the wall (2 x idle) and a margin for a loaded machine; never "for ever"


async def test_json_too_deep_is_a_bad_answer_and_never_a_recursion_error():
    with HostileServer({"/server_info": "deep", "/generate": "deep"}) as server:
        for path in ("/server_info", "/generate"):
            answer = await fetch_once(f"{server.url}{path}", "POST" if path == "/generate" else "GET", json={})
            with pytest.raises(BadAnswer, match="nested more than 32 levels deep"):
                answer.json()


@pytest.mark.parametrize(("behaviour", "said"), [
    ("number-inf", "inf"), ("number-nan", "nan"), ("number-digits", "99999999999999999999... (400 digits)"),
    ("number-huge-negative", "-3e+40"),
])
async def test_numbers_beyond_any_count_are_dropped_and_said(behaviour, said):
    with HostileServer({"/server_info": behaviour}) as server:
        answer = await fetch_once(f"{server.url}/server_info")
    info = answer.json()
    assert info["speculative_draft_window_size"] is None and info["max_total_num_tokens"] is None
    assert answer.dropped == [f"speculative_draft_window_size={said}", f"max_total_num_tokens={said}"]


async def test_one_line_json_shows_line_breaks_escaped():
    with HostileServer({"/server_info": "forged"}) as server:
        answer = await fetch_once(f"{server.url}/server_info")
    info = answer.json(one_line=True)
    assert info["speculative_draft_window_size"] == f"2048\\n{FORGED}RED"  # CR and the escapes: removed (plain)
    assert "\n" not in info["version"] and "\n" in answer.json()["version"]


async def _stream_lines(url: str, limits: StreamLimits) -> int:
    n = 0
    async with httpx.AsyncClient(timeout=limits.idle_s) as client:
        async with client.stream("POST", url, json={"max_tokens": 4}) as resp:
            async for lines in sse_lines(resp, limits):
                n += len(lines)
    return n


@pytest.mark.parametrize(("behaviour", "limits", "error", "says"), [
    ("endless", StreamLimits(5, 30, 1 << 20, 1 << 20), BadAnswer, "the stream went past 1 MiB"),
    ("bomb", StreamLimits(5, 30, 1 << 20, 1 << 20), BadAnswer, "the stream went past 1 MiB"),
    ("endless-line", StreamLimits(5, 30, 64 << 20, 256 << 10), BadAnswer, "a line of the stream went past 256 KiB"),
    ("huge-chunk", StreamLimits(5, 30, 64 << 20, 256 << 10), BadAnswer, "a line of the stream went past 256 KiB"),
    ("trickle", StreamLimits(1, 2, 1 << 20, 1 << 20), httpx.ReadTimeout, "not over after 2 s"),
    ("slow-trickle", StreamLimits(1, 30, 1 << 20, 1 << 20), httpx.ReadTimeout, ""),
])
async def test_a_stream_ends_at_its_first_bound(behaviour, limits, error, says):
    with HostileServer({"/v1/chat/completions": behaviour}) as server:
        with pytest.raises(error) as caught:
            await _stream_lines(f"{server.url}/v1/chat/completions", limits)
    assert says in str(caught.value)


async def test_stream_limits_grow_with_max_tokens_and_the_idle_limit(monkeypatch):
    monkeypatch.setenv("DDTUNE_IDLE_S", "2")
    chat, generate = StreamLimits.for_tokens(512, 900), StreamLimits.for_tokens(512, 900, cumulative=True)
    assert chat.idle_s == 2 and chat.wall_s == 2 + 0.5 * 512
    assert chat.total_bytes == (1 << 20) + 4096 * 512 and chat.line_bytes == (1 << 20) + 64 * 512
    assert generate.total_bytes > chat.total_bytes  # /generate repeats the text so far in every line
    with HostileServer() as server:  # a well-behaved stream fits easily
        assert await _stream_lines(f"{server.url}/v1/chat/completions", StreamLimits.for_tokens(4, 5)) == 10


async def test_fetch_reuses_a_client_and_reads_good_answers(monkeypatch):
    with HostileServer() as server:
        async with httpx.AsyncClient(base_url=server.url) as client:
            answers = await asyncio.gather(*(fetch(client, "GET", "/server_info") for _ in range(3)))
            missing = await fetch(client, "GET", "/nothing")
    assert all(a.status == 200 and a.json()["version"] == "0.5.9" and not a.dropped for a in answers)
    assert missing.status == 404 and "Not Found" in missing.text


def test_metrics_samples_that_are_not_counts_are_skipped():
    text = ("sglang:generation_tokens_total 100\nsglang:spec_verify_calls_total NaN\n"
            "sglang:spec_verify_calls_total{a=\"1\"} 40\nsglang:generation_tokens_total{a=\"2\"} +Inf\n"
            "sglang:generation_tokens_total{a=\"3\"} -5\n")
    counters = parse_counters(text)
    assert counters is not None and (counters.tokens, counters.verify_calls) == (100.0, 40.0)
    assert parse_counters("sglang:generation_tokens_total 1e308\nsglang:generation_tokens_total 1e308\n"
                          "sglang:spec_verify_calls_total 1\n") is None  # the sum overflows: no figure


@pytest.mark.parametrize(("raw", "as_int", "as_float"), [
    ("3", 3, 3.0), ("0.5", None, 0.5), ("-1", None, None), ("nan", None, None), ("inf", None, None),
    ("9" * 400, None, None), ("-3e40", None, None),
])
def test_log_fields_are_counts_or_nothing(raw, as_int, as_float):
    assert to_int(raw) == as_int and to_float(raw) == as_float

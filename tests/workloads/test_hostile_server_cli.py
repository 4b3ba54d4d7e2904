"""No server can exhaust or fool the client (issue 28, item 5), through the real CLI: ``ddtune up``
against an ``endpoint`` config, ``bench``, ``status``, ``doctor`` and ``report``, each a process of its
own, against a hostile server of the tests' own (tests/hostile_http.py) on 127.0.0.1.

What each holds: exit 1 with one line naming the problem; no traceback; the process's peak memory
(``wait4``) well under ``PEAK_BOUND`` (a gzip bomb drove it to 2.4 GB); the idle limit set low
(``DDTUNE_IDLE_S=1``) so a trickle ends in seconds; what bench stores has no NaN, no infinity and no
negative number, and ``report`` reads it; a ``/server_info`` string with line breaks forges no line.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.backends.lifecycle_support import write_config
from tests.hostile_http import FORGED, FORGED_DOCTOR, PEAK_BOUND, HostileServer, run_measured
from tests.helpers import run_ddtune

FAST = {"DDTUNE_IDLE_S": "2"}  # the client's idle limit: 2 s without a byte (a whole JSON answer: 4 s in all)
BENCH = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "2", "--warmup", "0", "--max-tokens", "4")


def endpoint(tmp_path, server: HostileServer, **server_keys):
    server_keys.setdefault("ready_timeout_s", 6)
    return write_config(tmp_path, backend="endpoint", url=server.url, port=server.port, connect_grace_s=2,
                        knobs={"window": 1024}, **server_keys)


def assert_one_clean_line(out, exit_code: int, line_start: str, says: str, peak: int) -> None:
    """Exit ``exit_code``; exactly one stderr line starts with ``line_start`` and it names the problem;
    no traceback anywhere; memory bounded."""
    both = out.stdout + out.stderr
    assert "Traceback" not in both and "Error:" not in both.replace("ddtune: error:", ""), both[-3000:]
    assert out.returncode == exit_code, both[-3000:]
    lines = [line for line in out.stderr.splitlines() if line.startswith(line_start)]
    assert len(lines) == 1 and says in lines[0], out.stderr[-3000:]
    assert peak < PEAK_BOUND, f"peak RSS {peak >> 20} MiB"


@pytest.mark.parametrize(("behaviour", "says"), [
    ("bomb", "larger than 8 MiB"),                       # 1/4 MB of gzip inflating to 256 MiB
    ("endless", "larger than 8 MiB"),                    # a body that never ends
    ("huge-chunk", "larger than 8 MiB"),                 # a chunk of 2**64-1 bytes, sent for ever
    ("trickle", "no whole answer within 4 s"),           # one byte every 0.3 s: under the idle limit, over the wall
    ("slow-trickle", "1-token /generate failed"),        # one byte every 3 s: over the idle limit
    ("bad-length", "Content-Length"),                    # Content-Length: abc
    ("deep", "nested more than 32 levels deep"),         # 200,000 nested arrays (RecursionError before)
])
def test_up_against_a_hostile_generate_fails_in_time_with_one_line(tmp_path, state_dir, behaviour, says):
    with HostileServer({"/generate": behaviour}) as server:
        out, peak = run_measured("--config", str(endpoint(tmp_path, server)), "up", timeout=60, **FAST)
    assert_one_clean_line(out, 1, "ddtune: server failed:", "not ready after 6 s", peak)
    assert says in out.stderr, out.stderr[-2000:]


@pytest.mark.parametrize("behaviour", ["number-inf", "number-digits", "number-nan", "number-negative"])
def test_up_takes_no_absurd_token_count_from_the_probe(tmp_path, state_dir, behaviour):
    with HostileServer({"/generate": behaviour, "/server_info": behaviour}) as server:
        out, peak = run_measured("--config", str(endpoint(tmp_path, server)), "up", "--allow-mismatch", timeout=60,
                                 **FAST)
        status = run_ddtune("--config", str(endpoint(tmp_path, server)), "status", "--json", timeout=60)
    both = out.stdout + out.stderr
    assert out.returncode == 0 and "Traceback" not in both and peak < PEAK_BOUND, both[-3000:]
    note = [line for line in out.stderr.splitlines() if "/server_info: dropped values" in line]
    if behaviour == "number-negative":  # a setting may be negative (SGLang's own -1 sentinels): said as it is
        assert not note and "server says -7 (/server_info)" in out.stderr, both
    else:
        assert len(note) == 1 and "speculative_draft_window_size=" in note[0], out.stderr
    assert "9" * 30 not in both, both  # said short, never whole
    for line in both.splitlines():  # nothing else shows what was dropped
        assert line in note or not re.search(r"\b(inf|nan|9{20})\b", line), line
    doc = json.loads(status.stdout, parse_constant=lambda c: pytest.fail(f"status --json holds {c}"))
    window = -7 if behaviour == "number-negative" else None
    assert doc["phase"] == "ready" and doc["effective"]["window_size"] == window


@pytest.mark.parametrize(("behaviour", "says"), [
    ("bomb", "the stream went past"),
    ("endless", "the stream went past"),
    ("endless-line", "went past 1 MiB"),                 # a line or the stream: whichever cap a read crosses first
    ("huge-chunk", "went past 1 MiB"),
    ("trickle", "the stream was not over after 4 s"),   # the wall: idle 2 s + 0.5 s for each of 4 tokens
    ("slow-trickle", "timed out waiting for /v1/chat/completions"),
    ("bad-length", "bad Content-Length 'abc'"),
    ("deep", "JSON nested too deep"),
])
def test_bench_against_a_hostile_stream_fails_with_one_line(tmp_path, state_dir, behaviour, says):
    with HostileServer({"/v1/chat/completions": behaviour}) as server:
        out, peak = run_measured("bench", "--url", server.url, *BENCH, timeout=60, **FAST)
    assert_one_clean_line(out, 1, "ddtune: error:", says, peak)


@pytest.mark.parametrize("behaviour", ["bomb", "deep", "slow-trickle", "bad-length", "forged"])
def test_bench_goes_on_when_server_info_is_hostile(tmp_path, state_dir, behaviour):
    with HostileServer({"/server_info": behaviour}) as server:
        out, peak = run_measured("bench", "--url", server.url, *BENCH, "--json", timeout=60, **FAST)
    assert out.returncode == 0 and "Traceback" not in out.stderr and peak < PEAK_BOUND, out.stderr[-3000:]
    server_doc = json.loads(out.stdout)["run"]["server"]
    if behaviour == "forged":  # read, and every string on one line
        assert "\n" not in json.dumps(server_doc["server_info"]).replace("\\\\n", "")
        assert "\\n" in server_doc["version"] and "\n" not in server_doc["version"]
    else:
        assert server_doc["server_info"] is None and server_doc["server_info_error"]


def numbers_in(value, path="") -> list[tuple[str, float]]:
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in numbers_in(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in numbers_in(v, f"{path}[{i}]")]
    return [(path, value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def strict_json(text: str):
    """JSON as ddtune's own report reads it: NaN and Infinity are not numbers."""
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"the document holds {c}"))


@pytest.mark.parametrize("behaviour", ["number-inf", "number-digits", "number-nan", "number-negative",
                                       "number-huge-negative"])
def test_what_bench_stores_against_absurd_numbers_is_valid_and_report_reads_it(tmp_path, state_dir, behaviour):
    out_file = tmp_path / "bench.json"
    with HostileServer({"/v1/chat/completions": behaviour, "/metrics": behaviour}) as server:
        out, peak = run_measured("bench", "--url", server.url, *BENCH, "--json", "--out", str(out_file), timeout=60,
                                 **FAST)
        table = run_ddtune("bench", "--url", server.url, *BENCH, timeout=60, **FAST)
    assert out.returncode == 0 and "Traceback" not in out.stderr and peak < PEAK_BOUND, out.stderr[-3000:]
    doc = strict_json(out_file.read_text())
    cell = doc["cells"][0]
    assert cell["requests"] == 2 and cell["errors"] == 0, cell
    assert {"completion_tokens", "spec_verify_ct", "spec_accept_length"} <= {d.split("=")[0] for d in cell["dropped"]}
    run_dir = doc["run"]["dir"]
    responses = [strict_json(line) for line in Path(run_dir, "responses.jsonl").read_text().splitlines()]
    cells = [strict_json(line) for line in Path(run_dir, "cells.jsonl").read_text().splitlines()]
    stored = numbers_in(doc) + numbers_in(responses) + numbers_in(cells)
    bad = [(where, v) for where, v in stored if not math.isfinite(v) or v < 0 or abs(v) > 2**53]
    assert not bad, bad
    assert all(r["dropped"] for r in responses), responses
    for source in (str(out_file), run_dir):
        report = run_ddtune("report", source, timeout=60)
        assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
        assert "# ddtune report" in report.stdout
    assert table.returncode == 0, table.stderr
    assert "dropped in story ctx 60 c1: the server sent numbers that are not counts, left out: completion_tokens=" \
        in table.stdout


def test_a_prompt_size_that_is_no_count_is_one_line(tmp_path, state_dir):
    with HostileServer({"/v1/chat/completions": "prompt-digits"}) as server:
        out, peak = run_measured("bench", "--url", server.url, *BENCH, timeout=60, **FAST)
    assert_one_clean_line(out, 1, "ddtune: error:", "no usable usage.prompt_tokens (dropped: prompt_tokens=9999", peak)


def test_server_info_line_breaks_forge_no_line_of_up_status_or_doctor(tmp_path, state_dir):
    with HostileServer({"/server_info": "forged"}) as server:
        config = str(endpoint(tmp_path, server))
        up = run_ddtune("--config", config, "up", timeout=60)
        status = run_ddtune("--config", config, "status", timeout=60)
        doctor = run_ddtune("--config", config, "doctor", timeout=120)
    assert up.returncode == 3, up.stderr  # the server says window 2048 (and then a forged line): a mismatch
    for out in (up, status, doctor):
        for line in (out.stdout + out.stderr).splitlines():
            assert not line.lstrip().startswith(FORGED) and not line.startswith(FORGED_DOCTOR), line
            assert "\x1b" not in line and "\r" not in line, repr(line)
    said = [line for line in status.stdout.splitlines() if line.startswith("MISMATCH:")]
    assert len(said) == 1 and "server says 2048\\nverified:   window: requested 1024" in said[0], status.stdout
    version = [line for line in doctor.stdout.splitlines() if line.startswith("[ok  ] SGLang:")]
    assert len(version) == 1 and f"0.5.9\\n{FORGED_DOCTOR}\\nRED" in version[0], doctor.stdout


@pytest.mark.parametrize("behaviour", ["endless", "bomb", "number-nan", "number-huge-negative", "deep"])
def test_the_load_counts_no_more_than_a_request_can_bring(tmp_path, state_dir, behaviour):
    """The live load (workloads/live) counts tokens as they stream: an endless stream counted ~5,000
    tokens a request of 8 before, 24,000 tok/s of nothing. Now a request counts at most
    most_tokens(8) = 80, and the summary is valid JSON."""
    with HostileServer({"/v1/chat/completions": behaviour, "/metrics": behaviour}) as server:
        out, peak = run_measured("load", "--url", server.url, "--concurrency", "2", "--duration", "3",
                                 "--max-tokens", "8", "--json", timeout=60, **FAST)
    assert out.returncode == 0 and "Traceback" not in out.stderr and peak < PEAK_BOUND, out.stderr[-3000:]
    summary = strict_json(out.stdout)
    requests = summary["finished"] + summary["errors"] + summary["cancelled"] + 2  # the two cut off at the end
    assert 0 <= summary["output_tokens"] <= requests * 80, summary
    assert not [(where, v) for where, v in numbers_in(summary) if not math.isfinite(v) or v < 0], summary

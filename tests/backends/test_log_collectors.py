"""Logs as users have them: every golden log re-prefixed the way docker, docker compose, kubectl
and journald write it gives the same ``inspect`` facts and the same classified tail lines; and a
fact whose rank-0 line is missing comes from the lowest rank present, with a note saying so."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from backends.logs.events import DecodeBatch, Fatal, KvCache, Ranks, WeightLoadEnd
from backends.logs.kind import read_lines
from backends.logs.parse import parse_line
from backends.logs.summary import read_log_lines, summarize
from tests.helpers import run_cli

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
GOLDEN = sorted(LOGS.glob("*.log"))


def _clock(i: int) -> str:
    return f"{9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"


# How each collector prefixes line i (docker and kubectl: RFC 3339 in UTC, nanoseconds; journald's
# short formats: local time, host, identifier[pid]).
COLLECTORS = {
    "docker-logs-t": lambda i: f"2026-11-30T{_clock(i)}.{i * 7919 % 10**9:09d}Z ",
    "docker-compose-logs-t": lambda i: f"sglang-1  | 2026-11-30T{_clock(i)}.{i * 7919 % 10**9:09d}Z ",
    "kubectl-timestamps": lambda i: f"2026-11-30T{_clock(i)}.{i * 31 % 10**6:06d}+00:00 ",
    "kubectl-prefix-timestamps": lambda i: f"[pod/sglang-7d9f/server] 2026-11-30T{_clock(i)}.{i:06d}Z ",
    "journald-short": lambda i: f"Nov  3 {_clock(i)} gpu-node-7 python3[41235]: ",
    "journald-short-precise": lambda i: f"Nov 30 {_clock(i)}.{i:06d} gpu-node-7 sglang-server[41235]: ",
    "journald-short-iso": lambda i: f"2026-11-30T{_clock(i)}+0000 gpu-node-7 python3[41235]: ",
}


def reprefix(raw: bytes, prefix) -> bytes:
    """Each ``\\n``-terminated line with the collector's prefix (a ``\\r`` redraw stays inside its line)."""
    return b"\n".join(prefix(i).encode() + line if line.strip() else line
                      for i, line in enumerate(raw.split(b"\n")))


@pytest.fixture(scope="module")
def plain_reports() -> dict[str, tuple[dict, str]]:
    out = {}
    for path in GOLDEN:
        doc = run_cli("inspect", str(path), "--json")
        human = run_cli("inspect", str(path))
        assert doc.returncode == human.returncode == 0, doc.stderr + human.stderr
        out[path.stem] = json.loads(doc.stdout), human.stdout.split("\n", 1)[1]
    return out


def inspect_in_process(path: Path, as_json: bool, capsys) -> str:
    """What ``ddtune inspect`` prints for ``path``, from its command module in this process: the 84
    prefixed logs below would each cost two interpreter starts; the plain reports they are compared
    with come from the real command line."""
    from tui.commands import inspect

    capsys.readouterr()
    assert inspect.run(argparse.Namespace(logfile=str(path), json=as_json)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("collector", list(COLLECTORS))
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_inspect_finds_the_same_facts_behind_a_collector_prefix(path, collector, plain_reports, tmp_path, capsys):
    prefixed = tmp_path / f"{path.stem}.{collector}.log"
    prefixed.write_bytes(reprefix(path.read_bytes(), COLLECTORS[collector]))
    want_doc, want_human = plain_reports[path.stem]
    assert json.loads(inspect_in_process(prefixed, True, capsys)) == want_doc
    human = inspect_in_process(prefixed, False, capsys)
    assert human.split("\n", 1)[1] == want_human  # phases, timings, notes: all but the file name


@pytest.mark.parametrize("collector", list(COLLECTORS))
def test_the_tail_classifies_prefixed_lines_as_it_does_plain_ones(collector, tmp_path):
    for path in GOLDEN:
        plain = read_lines(read_log_lines(path))
        prefixed = tmp_path / f"{path.stem}.log"
        prefixed.write_bytes(reprefix(path.read_bytes(), COLLECTORS[collector]))
        tail = read_lines(read_log_lines(prefixed))
        assert [(x.kind, x.event) for x in tail] == [(x.kind, x.event) for x in plain], path.name


DECODE = ("Decode batch, #running-req: 8, #token: 7200, token usage: 0.01, accept len: 3.40, accept rate: 0.16, "
          "cuda graph: True, gen throughput (token/s): 1104.93, #queue-req: 0")


@pytest.mark.parametrize("outer", [
    "2026-11-30T09:01:10.123456789Z ",
    "sglang-1  | 2026-11-30T09:01:10.123456789Z ",
    "2026-11-30T09:01:10.123456789Z sglang-1  | ",          # docker -t of a compose stream
    "Nov 30 09:01:10 gpu-node-7 docker-compose[912]: sglang-1  | ",  # compose under systemd
    "2026-11-30T09:01:10.5+01:00 ",
    "[pod/sglang-0/server] ",
    "[pod/sglang-0/server] 2026-11-30T09:01:10Z ",
    "Nov  3 09:01:10 gpu-node-7 python3[41235]: ",
    "Nov 30 09:01:10.123456 gpu-node-7 python3[41235]: ",
    "2026-11-30T09:01:10+0000 gpu-node-7 python3[41235]: ",
    "2026-11-30T09:01:10.123456+0000 gpu-node-7 python3[41235]: ",
])
def test_sglang_prefix_and_time_are_found_after_the_outer_prefix(outer):
    event = parse_line(outer + "[2026-11-30 09:01:09 DP1 TP1] " + DECODE)
    assert isinstance(event, DecodeBatch) and event.accept_len == 3.4
    assert event.ts == "2026-11-30 09:01:09" and event.ranks == Ranks(dp=1, tp=1)  # SGLang's time, not the collector's


def test_outer_prefixes_do_not_eat_the_message():
    fatal = parse_line("2026-11-30T09:01:10.1Z ValueError: window: must be positive")
    assert isinstance(fatal, Fatal) and fatal.message == "ValueError: window: must be positive"
    assert parse_line("2026-11-30T09:01:10.1Z") is None
    assert parse_line("Nov 30 09:01:10 gpu-node-7 python3[1]: ") is None
    assert parse_line("Novel 30 things: nothing") is None
    # a plain Python-logging line (space, not T, after the date) keeps its own meaning
    assert parse_line("2025-03-27 21:33:31,890 - INFO - flashinfer.jit: Loading JIT ops") is None


def _line(sec: int, ranks: str, msg: str) -> str:
    return f"[2026-11-30 09:00:{sec:02d}{ranks}] {msg}"


WEIGHTS = "Load weight end. elapsed=6.01 s, type=Qwen3ForCausalLM, avail mem=122.80 GB, mem usage=15.40 GB."
KV = "KV Cache is allocated. #tokens: {}, K size: 48.06 GB, V size: 48.06 GB"
GRAPH = "Capture cuda graph end. Time elapsed: {} s. mem usage=0.81 GB. avail mem=9.00 GB."


def test_missing_lead_rank_lines_come_from_the_lowest_rank_and_say_so():
    s = summarize([
        _line(1, " DP3 TP3", WEIGHTS.replace("6.01", "6.30")),
        _line(1, " DP2 TP2", WEIGHTS),
        _line(2, " DP3 TP3", KV.format(900)),
        _line(2, " DP2 TP2", KV.format(700)),
        _line(3, " DP0 TP0", GRAPH.format("3.50")),
        _line(3, " DP1 TP1", GRAPH.format("3.70")),
    ])
    doc = s.to_json()
    assert doc["weights"] == [{"elapsed_s": 6.01, "type": "Qwen3ForCausalLM", "mem_usage_gb": 15.4}]
    assert doc["kv_cache_tokens"] == [700]
    assert doc["cuda_graph"] == [{"name": "default", "elapsed_s": 3.5}]  # DP0's line is there: it counts
    assert doc["notes"] == ["weights: no rank-0 line in this log; taken from DP2 TP2",
                            "KV cache: no rank-0 line in this log; taken from DP2 TP2"]


def test_lead_rank_lines_win_and_leave_no_note():
    s = summarize([_line(1, " TP1", KV.format(900)), _line(1, " TP0", KV.format(700)), _line(1, "", WEIGHTS)])
    assert s.kv_cache_tokens == (700,) and len(s.weights) == 1 and s.notes == ()


def test_inspect_says_which_rank_a_fact_came_from(tmp_path):
    log = tmp_path / "excerpt.log"
    log.write_text("\n".join([_line(1, " TP1", WEIGHTS), _line(2, " TP1", KV.format(700))]) + "\n")
    human = run_cli("inspect", str(log))
    assert human.returncode == 0, human.stderr
    assert "note: weights: no rank-0 line in this log; taken from TP1" in human.stdout
    assert "KV cache tokens: 700" in human.stdout
    doc = json.loads(run_cli("inspect", str(log), "--json").stdout)
    assert doc["kv_cache_tokens"] == [700] and len(doc["notes"]) == 2
    assert isinstance(parse_line(_line(1, " TP1", WEIGHTS)), WeightLoadEnd)
    assert isinstance(parse_line(_line(2, " TP1", KV.format(700))), KvCache)

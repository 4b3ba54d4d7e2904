"""backends/logs/span.py: the decode lines a stretch of a log holds, by byte offset (no tail)."""

from pathlib import Path

import pytest

from backends.logs.span import decode_lines, decode_since, log_end, weighted_accept

REAL = Path(__file__).parents[1] / "data" / "real" / "0.5.17" / "logs" / "dflash_w512_ddtune_up_load_console.log"


def line(running: int, tokens: int, accept: float) -> str:
    return (f"[2026-12-01 19:42:35] Decode batch, #running-req: {running}, #token: {tokens}, token usage: 0.01, "
            f"accept len: {accept:.2f}, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 900.00, "
            f"#queue-req: 0\n")


def test_only_lines_after_the_offset_and_only_whole_ones(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(line(4, 100, 2.0))
    start = log_end(log)
    with open(log, "a") as fh:
        fh.write(line(2, 80, 5.0) + line(6, 90, 3.0) + line(1, 10, 9.0)[:40])  # the last still being written
    events, offset = decode_since(log, start)
    assert [e.accept_len for e in events] == [5.0, 3.0]
    value, lines, weight = weighted_accept(events)
    assert value == pytest.approx((5.0 * 2 + 3.0 * 6) / 8) and (lines, weight) == (2, 8)
    with open(log, "a") as fh:
        fh.write(line(1, 10, 9.0)[40:])
    events, _ = decode_since(log, offset)  # the line finished: read once, whole
    assert [e.accept_len for e in events] == [9.0]


def test_idle_lines_and_other_ranks_and_missing_files_give_nothing(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(line(3, 0, 16.0) + line(3, 50, 2.0).replace("] Decode", " TP1] Decode"))
    assert decode_since(log, 0)[0] == []
    assert decode_since(tmp_path / "none.log", 0) == ([], 0) and log_end(tmp_path / "none.log") is None
    assert decode_since(None, None) == ([], None) and weighted_accept([]) == (None, 0, 0)


def test_a_shrunk_log_is_read_from_its_start(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(line(2, 40, 4.0))
    assert [e.accept_len for e in decode_since(log, 10_000)[0]] == [4.0]


def test_the_real_0517_log_idle_lines_are_left_out():
    every = REAL.read_text(errors="replace").splitlines()
    events = decode_lines(every)
    raw = [s for s in every if "Decode batch" in s]
    assert events and len(events) < len(raw)  # its bursts' #token: 0 lines are not rates of anything
    assert all(e.tokens != 0 for e in events)

"""Verification: requested knobs versus what the server reports, as typed KnobCheck records.

Every mismatch is named; the sentence a user reads is derived from the check."""

from pathlib import Path

import pytest

from backends.knobs.plan import SHIPPED
from backends.logs.events import DDTreeWorker, DraftRunner
from backends.logs.kind import LogLine
from backends.logs.summary import read_log_lines
from backends.knobs.verify import KnobCheck, verify

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
WANT_2048 = {"window_size": 2048, "compact_cache": True, "block_size": None, "budget": None}


def runner(window, compact, block=16):
    """The draft-window line as LogFollower keeps it (marker -> the latest line holding it)."""
    return {"Initialized DFLASH draft runner": f"[2026-11-30 09:00:15 TP0] Initialized DFLASH draft runner. "
            f"attention_backend=fa3, model=DFlashDraftModel, block_size={block}, draft_window_size={window}, "
            f"compact_cache={compact}"}


def tree(block, budget, nodes):
    return {"Initialized DDTree worker": f"[2026-11-30 09:00:15] Initialized DDTree worker. block_size={block}, "
            f"tree_budget={budget}, max_tree_nodes={nodes}"}


def status(out) -> dict[str, str]:
    return {c.name: c.status for c in out.checks}


def by_name(out) -> dict[str, KnobCheck]:
    return {c.name: c for c in out.checks}


def test_match_from_draft_runner_line():
    out = verify(WANT_2048, runner(2048, True))
    assert status(out) == {"window": "verified", "compact_cache": "verified", "block_size": "default",
                           "budget": "unverified"}
    assert by_name(out)["window"] == KnobCheck("window", 2048, 2048, "draft runner line", "verified")
    assert out.mismatches == ()
    assert out.effective == {"window_size": 2048, "compact_cache": True, "block_size": 16, "budget": None}


def test_window_silently_ignored_is_loud():
    out = verify(WANT_2048, runner(None, False))
    window = by_name(out)["window"]
    assert (window.requested, window.effective, window.source, window.status) == \
        (2048, None, "draft runner line", "mismatch")
    assert window.sentence == "window: requested 2048, server says None (draft runner line)"
    assert by_name(out)["compact_cache"].status == "mismatch"
    assert by_name(out)["compact_cache"].sentence.startswith("compact_cache: requested True, server says False")
    assert out.mismatches == tuple(c.sentence for c in out.checks if c.status == "mismatch")


def test_a_marked_line_is_read_through_the_event_the_log_reader_parsed():
    """LogFollower hands verification each marked line with the event it parsed once: the verdict is
    DraftRunner.window_size, not a second reading of the text (here they disagree on purpose)."""
    text = runner(2048, True)["Initialized DFLASH draft runner"]
    parsed = DraftRunner(1024, True, 16, "fa3", "DFlashDraftModel")
    out = verify(WANT_2048, {"Initialized DFLASH draft runner": LogLine(text, "draft", parsed)})
    window = by_name(out)["window"]
    assert (window.status, window.effective, window.source) == ("mismatch", 1024, "draft runner line")
    tree_line = tree(8, 7, 8)["Initialized DDTree worker"]
    out = verify(dict(WANT_2048, budget=7), {"Initialized DDTree worker": LogLine(tree_line, "draft",
                                                                               DDTreeWorker(8, 9, 10))})
    assert (by_name(out)["budget"].status, by_name(out)["budget"].effective) == ("mismatch", 9)


def test_server_info_when_no_log():
    out = verify(WANT_2048, server_info={"speculative_draft_window_size": 1024})
    window = by_name(out)["window"]
    assert (window.effective, window.source, window.status) == (1024, "/server_info", "mismatch")
    assert out.mismatches[0] == "window: requested 2048, server says 1024 (/server_info)"


def test_old_server_info_spelling_is_read():
    out = verify(WANT_2048, server_info={"speculative_dflash_draft_window_size": 2048})
    assert by_name(out)["window"].status == "verified"


def test_log_line_beats_server_info():
    out = verify(WANT_2048, runner(2048, True), server_info={"speculative_draft_window_size": None})
    assert by_name(out)["window"].source == "draft runner line"
    assert "mismatch" not in status(out).values()


def test_budget_from_ddtree_line():
    want = dict(WANT_2048, budget=8)
    out = verify(want, runner(2048, True) | tree(16, 15, 16))
    assert by_name(out)["budget"] == KnobCheck("budget", 8, 15, "DDTree worker line", "mismatch")
    assert out.mismatches == ("budget: requested 8, server says 15 (DDTree worker line)",)


def test_unrequested_budget_and_block_size_are_the_servers_pick_not_a_mismatch():
    """Not requested: whatever the server picked is fine (status default), from any source."""
    out = verify(dict(WANT_2048, block_size=None, budget=None), tree(8, 7, 8),
                 server_info={"speculative_draft_window_size": 2048})
    assert by_name(out)["budget"] == KnobCheck("budget", None, 7, "DDTree worker line", "default")
    assert by_name(out)["block_size"] == KnobCheck("block_size", None, 8, "DDTree worker line", "default")
    assert "not requested" in by_name(out)["budget"].sentence and out.mismatches == ()


def test_requested_block_size_is_checked():
    out = verify(dict(WANT_2048, block_size=9), runner(2048, True, block=16))
    assert by_name(out)["block_size"].status == "mismatch"


def test_window_cleared_but_server_runs_one_is_a_mismatch():
    """window = none means a full-context draft cache, not "the server's default": a window is wrong."""
    want = {"window_size": None, "compact_cache": False, "block_size": None, "budget": None}
    out = verify(want, runner(1024, True))
    assert status(out)["window"] == "mismatch" and status(out)["compact_cache"] == "mismatch"
    assert status(verify(want, runner(None, False)))["window"] == "verified"


def test_nothing_reported_is_unverified_not_a_mismatch():
    out = verify(WANT_2048)
    assert set(status(out).values()) == {"unverified"}
    assert out.mismatches == () and out.effective["window_size"] is None and out.sources == {}
    assert by_name(out)["window"].sentence == "window: requested 2048; the server does not say what it uses"


def test_knobs_the_server_never_reports_are_unverified():
    out = verify(WANT_2048, runner(2048, True),
                 knobs={"window": 2048, "topk": 4, "budget": None, "mem": "0.8", "off": None})
    checks = by_name(out)
    assert checks["topk"] == KnobCheck("topk", 4, None, None, "unverified")
    assert checks["mem"] == KnobCheck("mem", "0.8", None, None, "unverified")
    assert "off" not in checks  # cleared and never reported: nothing to say
    assert [c.name for c in out.checks].count("window") == 1  # reported knobs are checked once


@pytest.mark.parametrize("log, requested, expected", [
    ("dflash_0523_tp2.log", 2048, {"window": "verified", "compact_cache": "verified", "block_size": "default"}),
    ("dflash_0511.log", 2048, {"window": "mismatch", "compact_cache": "mismatch", "block_size": "default"}),
    ("dflash_0511.log", None, {"window": "verified", "compact_cache": "verified", "block_size": "default"}),
    ("oom_at_capture.log", 2048, {"window": "mismatch", "compact_cache": "verified", "block_size": "default"}),
    ("oom_at_capture.log", 4096, {"window": "verified", "compact_cache": "verified", "block_size": "default"}),
    ("real_pr22166_decode.log", 2048, {"window": "unverified", "compact_cache": "unverified",
                                       "block_size": "unverified"}),
    ("port_in_use.log", 2048, {"window": "unverified", "compact_cache": "unverified", "block_size": "unverified"}),
])
def test_checks_from_real_logs(log, requested, expected):
    """The lines LogFollower keeps from a log (the latest holding each marker) give these verdicts."""
    marked = {}
    for line in read_log_lines(LOGS / log):
        for marker in SHIPPED.log_markers():
            if marker in line:
                marked[marker] = line
    want = {"window_size": requested, "compact_cache": requested is not None, "block_size": None, "budget": None}
    out = verify(want, marked)
    assert {k: v for k, v in status(out).items() if k in expected} == expected
    assert status(out)["budget"] == "unverified"  # no DDTree line in these logs, no /server_info
    assert out.mismatches == tuple(c.sentence for c in out.checks if c.status == "mismatch")


@pytest.mark.parametrize("info, want_budget, expected", [
    ({"speculative_draft_window_size": 2048, "speculative_num_draft_tokens": 16, "speculative_ddtree_budget": 8},
     8, {"window": "verified", "compact_cache": "verified", "block_size": "default", "budget": "verified"}),
    ({"speculative_draft_window_size": None, "speculative_ddtree_budget": 15},
     8, {"window": "mismatch", "compact_cache": "mismatch", "block_size": "unverified", "budget": "mismatch"}),
    ({"speculative_dflash_draft_window_size": 2048, "speculative_dflash_block_size": 16},
     None, {"window": "verified", "compact_cache": "verified", "block_size": "default", "budget": "unverified"}),
    ({"speculative_draft_window_size": "2048", "speculative_ddtree_budget": None},
     None, {"window": "verified", "compact_cache": "verified", "block_size": "unverified", "budget": "default"}),
    ({}, 8, {"window": "unverified", "compact_cache": "unverified", "block_size": "unverified",
             "budget": "unverified"}),
])
def test_checks_from_server_info(info, want_budget, expected):
    out = verify(dict(WANT_2048, budget=want_budget), server_info=info)
    assert status(out) == expected
    assert all(c.source == "/server_info" for c in out.checks if c.status != "unverified")


def test_check_json_round_trip_and_bad_records():
    check = KnobCheck("window", 2048, None, "draft runner line", "mismatch")
    assert KnobCheck.from_json(check.to_json()) == check
    for bad, words in (({"name": "w", "status": "maybe"}, "'status'"), ({"status": "verified"}, "'name'"),
                       ({"name": "w", "status": "verified", "requested": [1]}, "'requested'"),
                       ({"name": "w", "status": "verified", "source": 3}, "'source'"), ("window", "object")):
        with pytest.raises(ValueError, match=words):
            KnobCheck.from_json(bad)

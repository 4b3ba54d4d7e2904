"""Verification: requested knobs versus what the server reports; every mismatch is named."""

from types import SimpleNamespace

from backends.verify import verify

WANT_2048 = {"window_size": 2048, "compact_cache": True, "block_size": None, "budget": None}


def runner(window, compact, block=16):
    return SimpleNamespace(window_size=window, compact_cache=compact, block_size=block)


def test_match_from_draft_runner_line():
    out = verify(WANT_2048, draft_runner=runner(2048, True))
    assert out.mismatches == ()
    assert out.effective == {"window_size": 2048, "compact_cache": True, "block_size": 16, "budget": None}


def test_window_silently_ignored_is_loud():
    out = verify(WANT_2048, draft_runner=runner(None, False))
    assert "window: requested 2048, server says None (draft runner line)" in out.mismatches
    assert any(m.startswith("compact_cache: requested True, server says False") for m in out.mismatches)


def test_server_info_when_no_log():
    out = verify(WANT_2048, server_info={"speculative_draft_window_size": 1024})
    assert out.mismatches[0] == "window: requested 2048, server says 1024 (/server_info)"


def test_log_line_beats_server_info():
    out = verify(WANT_2048, draft_runner=runner(2048, True), server_info={"speculative_draft_window_size": None})
    assert out.mismatches == ()


def test_budget_from_ddtree_line():
    want = dict(WANT_2048, budget=8)
    out = verify(want, draft_runner=runner(2048, True),
                 ddtree=SimpleNamespace(tree_budget=15, block_size=16, max_tree_nodes=16))
    assert out.mismatches == ("budget: requested 8, server says 15 (DDTree worker line)",)


def test_nothing_reported_is_unverified_not_a_mismatch():
    out = verify(WANT_2048)
    assert out.mismatches == () and out.effective["window_size"] is None and out.sources == {}

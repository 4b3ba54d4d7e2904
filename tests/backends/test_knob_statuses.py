"""The knob rows a reader shows (the console) come from the typed checks: no prose is searched."""

from backends.knobs.verify import KnobCheck, verify
from backends.server.status import KnobStatus as KnobRow, knob_statuses as knob_rows

KNOBS = {"budget": 8, "topk": 4, "window": 2048}


def test_rows_follow_the_check_status():
    checks = (KnobCheck("window", 2048, 2048, "draft runner line", "verified"),
              KnobCheck("budget", 8, 15, "DDTree worker line", "mismatch"),
              KnobCheck("topk", 4, None, None, "unverified"),
              KnobCheck("compact_cache", True, True, "draft runner line", "verified"))
    assert knob_rows(KNOBS, checks) == (KnobRow("budget", "8", "15", False), KnobRow("topk", "4", None, None),
                                        KnobRow("window", "2048", "2048", True))


def test_no_checks_yet_is_unknown_not_verified():
    assert knob_rows({"window": None, "mem": "0.8"}, ()) == (KnobRow("window", "none", None, None),
                                                               KnobRow("mem", "0.8", None, None))


def test_the_servers_pick_for_an_unrequested_knob_shows_and_is_fine():
    checks = (KnobCheck("budget", None, 15, "DDTree worker line", "default"),
              KnobCheck("window", None, None, "/server_info", "verified"))
    assert knob_rows({"budget": None, "window": None}, checks) == (KnobRow("budget", "none", "15", True),
                                                                   KnobRow("window", "none", "None", True))
    quiet = (KnobCheck("budget", None, None, "/server_info", "default"),)
    assert knob_rows({"budget": None}, quiet) == (KnobRow("budget", "none", None, None),)


def test_a_window_the_server_ignored_is_a_mismatch_row():
    """The same words as the old prose once held ("window: ..."), but read from the record."""
    out = verify({"window_size": 2048, "compact_cache": True, "block_size": None, "budget": None},
                 server_info={"speculative_draft_window_size": None}, knobs=KNOBS)
    rows = {r.name: r for r in knob_rows(KNOBS, out.checks)}
    assert rows["window"] == KnobRow("window", "2048", "None", False)
    assert rows["topk"] == KnobRow("topk", "4", None, None) and rows["budget"].verified is None

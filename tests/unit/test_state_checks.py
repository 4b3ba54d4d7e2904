"""server.json keeps the typed knob checks; a record from before checks were typed still loads."""

import json

import pytest

from backends.record.state import ServerState
from backends.server.record import load_state, save_state
from backends.knobs.verify import KnobCheck
from tests.backends.lifecycle_support import write_config
from tests.helpers import run_cli

VALID = {"backend": "sim", "pid": None, "pgid": None, "host": "127.0.0.1", "port": 30000,
         "url": "http://127.0.0.1:30000", "config_hash": "x", "knobs": {"window": 2048}, "log_path": None,
         "started_at": 1.0, "phase": "ready"}
CHECKS = (KnobCheck("window", 2048, None, "draft runner line", "mismatch"),
          KnobCheck("compact_cache", True, True, "/server_info", "verified"),
          KnobCheck("budget", None, 15, "DDTree worker line", "default"),
          KnobCheck("topk", 4, None, None, "unverified"))
OLD_SENTENCE = "window: requested 2048, server says None (draft runner line)"


def test_checks_round_trip_through_server_json(state_dir):
    state = ServerState.from_json(VALID).with_(checks=CHECKS)
    save_state(state)
    doc = json.loads((state_dir / "server.json").read_text())
    assert doc["checks"][0] == {"name": "window", "requested": 2048, "effective": None,
                                "source": "draft runner line", "status": "mismatch"}
    assert doc["mismatches"] == [OLD_SENTENCE]  # still written, for readers that only print sentences
    loaded = load_state()
    assert loaded is not None and loaded.checks == CHECKS and loaded == state
    assert loaded.mismatches == (OLD_SENTENCE,)


def test_an_old_record_with_only_mismatch_sentences_loads():
    old = ServerState.from_json({**VALID, "effective": {"window_size": None}, "mismatches": [OLD_SENTENCE]})
    assert old.mismatches == (OLD_SENTENCE,)
    (check,) = old.checks
    assert (check.name, check.status, check.sentence) == ("window", "mismatch", OLD_SENTENCE)
    assert check.requested is None and check.effective is None  # the old record never stored them
    assert ServerState.from_json(VALID).checks == ()


def test_a_bad_check_names_the_field():
    with pytest.raises(ValueError, match=r"field 'checks'\[1\]: 'status'"):
        ServerState.from_json({**VALID, "checks": [CHECKS[0].to_json(), {"name": "w", "status": "fine"}]})
    with pytest.raises(ValueError, match="field 'checks': expected a list"):
        ServerState.from_json({**VALID, "checks": "window"})


def test_status_prints_an_old_records_mismatch(tmp_path, state_dir):
    """A server.json written by an older ddtune: status still shows its mismatch, text and JSON."""
    (state_dir / "server.json").write_text(json.dumps({**VALID, "mismatches": [OLD_SENTENCE]}))
    cfg = write_config(tmp_path)
    out = run_cli("--config", str(cfg), "status", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["mismatches"] == [OLD_SENTENCE]
    assert doc["checks"] == [{"name": "window", "requested": None, "effective": None, "source": None,
                              "status": "mismatch", "note": OLD_SENTENCE}]
    out = run_cli("--config", str(cfg), "status")
    assert f"MISMATCH:   {OLD_SENTENCE}" in out.stdout

"""A corrupt server.json is reported, moved aside, and ddtune goes on: status, down and up never
crash on it, and nothing it names is signalled."""

import json

import pytest

from backends.record.state import ServerState
from tests.backends.lifecycle_support import write_config
from tests.helpers import run_cli, run_ddtune

VALID = {"backend": "sim", "pid": 12345, "pgid": 12345, "host": "127.0.0.1", "port": 30000,
         "url": "http://127.0.0.1:30000", "config_hash": "x", "knobs": {}, "log_path": None, "started_at": 1.0}

CORRUPT = {
    "list": b"[]",
    "string": b'"x"',
    "pid-abc": json.dumps({**VALID, "pid": "abc"}).encode(),
    "pid-negative": json.dumps({**VALID, "pid": -5, "pgid": -5}).encode(),
    "pgid-bool": json.dumps({**VALID, "pgid": True}).encode(),
    "create-time-text": json.dumps({**VALID, "create_time": "yesterday"}).encode(),
    "argv-numbers": json.dumps({**VALID, "argv": [1, 2]}).encode(),
    "missing-port": json.dumps({k: v for k, v in VALID.items() if k != "port"}).encode(),
    "checks-not-a-list": json.dumps({**VALID, "checks": {"window": "ok"}}).encode(),
    "check-bad-status": json.dumps({**VALID, "checks": [{"name": "window", "status": "fine"}]}).encode(),
    "binary": b"\xff\xfe\x00garbage\x00",
    "torn": json.dumps(VALID).encode()[:40],
}


@pytest.mark.parametrize("name", sorted(CORRUPT))
@pytest.mark.parametrize("command", ["status", "down"])
def test_corrupt_record_is_set_aside_not_a_traceback(tmp_path, state_dir, name, command):
    (state_dir / "server.json").write_bytes(CORRUPT[name])
    cfg = write_config(tmp_path)
    out = run_cli("--config", str(cfg), command)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "server.json is corrupt" in out.stderr and "moved the record to" in out.stderr
    assert not (state_dir / "server.json").exists()
    assert len(list(state_dir.glob("server.json.corrupt-*"))) == 1


def test_up_goes_on_past_a_corrupt_record(tmp_path, state_dir, groups):
    (state_dir / "server.json").write_bytes(CORRUPT["pid-abc"])
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.2"))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    assert "server.json is corrupt" in out.stderr and "field 'pid'" in out.stderr
    assert json.loads((state_dir / "server.json").read_text())["phase"] == "ready"


def test_decoder_names_the_field():
    with pytest.raises(ValueError, match="field 'pid': expected a positive integer or null"):
        ServerState.from_json({**VALID, "pid": "abc"})
    for bad in (-5, 0):  # psutil.Process(-5) raised ValueError: a traceback out of `ddtune status`
        with pytest.raises(ValueError, match=f"field 'pid': expected a positive integer or null, got {bad}"):
            ServerState.from_json({**VALID, "pid": bad})
    with pytest.raises(ValueError, match="field 'started_at': expected a number"):
        ServerState.from_json({**VALID, "started_at": float("nan")})
    assert ServerState.from_json(VALID).pid == 12345


def test_the_phase_is_one_of_the_phases_and_is_written_as_before():
    """The record's phase decodes to the one Phase vocabulary; one that is none of it is a bad field,
    and a decoded record writes the very string it was read from (older ddtunes read it)."""
    from backends.core.phase import Phase

    with pytest.raises(ValueError, match="field 'phase': expected one of idle, stopping-old, .*, got 'readyish'"):
        ServerState.from_json({**VALID, "phase": "readyish"})
    with pytest.raises(ValueError, match="field 'phase'"):
        ServerState.from_json({**VALID, "phase": 3})
    state = ServerState.from_json({**VALID, "phase": "ready"})
    assert state.phase is Phase.READY
    assert json.loads(json.dumps(state.to_json()))["phase"] == "ready"
    assert ServerState.from_json(VALID).phase is Phase.STARTING

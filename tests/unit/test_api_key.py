"""A server launched with --api-key (in extra_args, as shared GPU boxes do) is probed, verified and
benchmarked with that key, and the key is in no ddtune output or state file outside the 0600
launch record (the server's own log holds SGLang's server_args dump: 0600 too)."""

import json
import os
import stat
from pathlib import Path

from tests.backends.lifecycle_support import write_config
from tests.helpers import MEASURE_S, run_ddtune

KEY = "sk-test-9f3c2b7e1d"


def assert_private(state_dir):
    """0700 dirs, 0600 files: nothing under the state dir is readable by another user."""
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    for root, dirs, files in os.walk(state_dir):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            mode = stat.S_IMODE(os.stat(path).st_mode)
            assert mode & 0o077 == 0, f"{path} is {oct(mode)}"


def files_holding(state_dir, text) -> set[str]:
    found = set()
    for root, _, files in os.walk(state_dir):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path) and text.encode() in Path(path).read_bytes():
                found.add(os.path.relpath(path, state_dir))
    return found


def test_managed_server_with_api_key_is_ready_verified_and_the_key_stays_secret(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.3", "--api-key", KEY))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    assert "ready" in out.stderr and "MISMATCH" not in out.stderr
    assert "effective: window_size=2048" in out.stderr  # /server_info answered the key
    assert "--api-key ***" in out.stderr                 # the launched note shows the flag, not the key
    outputs = [out.stdout + out.stderr]

    status = run_ddtune("--config", str(cfg), "status", "--json")
    doc = json.loads(status.stdout)
    assert doc["phase"] == "ready" and doc["mismatches"] == [] and "***" in doc["argv"]
    outputs.append(status.stdout + status.stderr)

    # no --api-key, no DDTUNE_API_KEY: bench finds the key of the server ddtune launched
    bench = run_ddtune("--config", str(cfg), "bench", "--contexts", "60", "--concurrency", "1",
                       "--requests-per-cell", "2", "--max-tokens", "16", "--json", timeout=MEASURE_S,
                       **{"DDTUNE_API_KEY": ""})
    assert bench.returncode == 0, bench.stderr
    outputs.append(bench.stdout + bench.stderr)

    down = run_ddtune("--config", str(cfg), "down")
    assert down.returncode == 0, down.stderr
    outputs.append(down.stdout + down.stderr)

    for text in outputs:
        assert KEY not in text
    holders = files_holding(state_dir, KEY)
    assert all(h.startswith("logs/server-") for h in holders), holders  # the server's own log only
    assert_private(state_dir)


def test_launch_record_is_0600_and_holds_the_real_key(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.3", "--api-key", KEY))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    record = state_dir / "launch.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert KEY in json.loads(record.read_text())["argv"]
    assert KEY not in (state_dir / "server.json").read_text()
    assert_private(state_dir)


def test_bench_uses_ddtune_api_key_and_a_missing_key_says_how_to_fix_it(tmp_path, state_dir, start_sim):
    sim = start_sim("--api-key", KEY)
    url = f"http://127.0.0.1:{sim.port}"
    args = ("bench", "--url", url, "--contexts", "60", "--concurrency", "1", "--requests-per-cell", "1",
            "--max-tokens", "8")
    ok = run_ddtune(*args, "--json", timeout=MEASURE_S, DDTUNE_API_KEY=KEY)
    assert ok.returncode == 0, ok.stderr
    assert KEY not in ok.stdout + ok.stderr
    runs = state_dir / "runs"
    assert list(runs.glob("*-bench/run.json"))          # the run was recorded ...
    assert not files_holding(runs, KEY)                  # ... with /server_info's api_key redacted
    assert '"api_key": "***"' in next(runs.glob("*-bench/run.json")).read_text()

    missing = run_ddtune(*args, timeout=MEASURE_S, DDTUNE_API_KEY="")
    assert missing.returncode != 0
    assert "401" in missing.stderr and "DDTUNE_API_KEY" in missing.stderr
    assert "Traceback" not in missing.stderr

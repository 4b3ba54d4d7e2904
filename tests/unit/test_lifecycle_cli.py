"""ddtune up / restart / status / down / doctor as real processes on the simulator."""

import os
import json

from tests.backends.lifecycle_support import read_state, write_config
from tests.helpers import run_cli, run_ddtune
from tests.workloads.sandbox_support import path_without_bwrap


def status_json(cfg):
    out = run_ddtune("--config", str(cfg), "status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_up_restart_status_down(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-drain-seconds", "0.3"))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    for phase in ("stopping-old", "waiting-for-port-and-gpu", "loading-weights", "capturing-graphs", "ready"):
        assert phase in out.stderr
    doc = status_json(cfg)
    assert {"backend", "pid", "phase", "url", "knobs", "effective", "checks", "mismatches"} <= set(doc)
    assert doc["phase"] == "ready" and doc["backend"] == "sim"
    assert set(doc["effective"]) >= {"window_size", "compact_cache", "block_size", "budget"}
    assert doc["effective"]["window_size"] == 2048 and doc["mismatches"] == []
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["window"] == {"name": "window", "requested": 2048, "effective": 2048,
                                "source": "draft runner line", "status": "verified"}
    first_pid = doc["pid"]

    out = run_ddtune("--config", str(cfg), "restart", "--set", "window=1024")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    doc = status_json(cfg)
    assert doc["pid"] != first_pid and doc["phase"] == "ready"
    assert doc["knobs"]["window"] == 1024
    assert doc["effective"]["window_size"] == 1024 and doc["mismatches"] == []

    out = run_ddtune("--config", str(cfg), "status")
    assert "phase:      ready" in out.stdout and "window=1024" in out.stdout
    assert "verified:   window: 1024, as requested (draft runner line)" in out.stdout

    out = run_ddtune("--config", str(cfg), "restart", "--set", "topk=4")  # keeps window 1024
    groups.track_state()
    assert out.returncode == 0, out.stderr
    assert "unverified: topk: requested 4" in out.stderr  # the server never reports topk
    doc = status_json(cfg)
    assert doc["knobs"]["window"] == 1024 and doc["knobs"]["topk"] == 4
    assert {"name": "topk", "requested": 4, "effective": None, "source": None, "status": "unverified"} in doc["checks"]

    tuned_pid = doc["pid"]
    out = run_ddtune("--config", str(cfg), "up")  # plain up keeps the tuned server and says how it differs
    assert out.returncode == 0, out.stderr
    doc = status_json(cfg)
    assert doc["pid"] == tuned_pid and doc["knobs"]["window"] == 1024
    assert "window=1024 (the file says 2048)" in out.stderr and "ddtune up --apply-config" in out.stderr
    assert "stopping old server" not in out.stderr

    out = run_ddtune("--config", str(cfg), "up", "--apply-config")  # the file's knobs: window 2048 again
    groups.track_state()
    assert out.returncode == 0, out.stderr
    doc = status_json(cfg)
    assert doc["pid"] != tuned_pid
    assert doc["knobs"]["window"] == 2048 and doc["effective"]["window_size"] == 2048

    out = run_ddtune("--config", str(cfg), "down")
    assert out.returncode == 0 and f"stopped pid {doc['pid']}" in out.stderr
    assert status_json(cfg)["phase"] == "stopped"


def test_preset_sets_knobs(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path)
    out = run_ddtune("--config", str(cfg), "up", "--preset", "b8-t4-nowindow")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    doc = status_json(cfg)
    assert doc["knobs"] == {"budget": 8, "topk": 4, "window": None}
    assert doc["effective"]["window_size"] is None and doc["effective"]["compact_cache"] is False
    assert doc["effective"]["budget"] == 8 and doc["mismatches"] == []
    assert "--speculative-ddtree-budget" in doc["argv"]
    status = {c["name"]: c["status"] for c in doc["checks"]}
    assert status["budget"] == "verified" and status["window"] == "verified" and status["topk"] == "unverified"


def test_unsupported_knob_fails_before_anything_starts(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-version", "0.5.11"))
    out = run_ddtune("--config", str(cfg), "up", "--set", "budget=8")
    assert out.returncode == 2
    assert "knob 'budget'" in out.stderr and "no tree verifier" in out.stderr
    assert "hint: clear it (--set budget=none" in out.stderr
    assert read_state(state_dir) is None


def test_0511_window_flag_spelling(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-version", "0.5.11", "--sim-load-seconds", "0.5"))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    doc = status_json(cfg)
    assert "--speculative-dflash-draft-window-size" in doc["argv"]
    assert doc["effective"]["window_size"] == 2048 and doc["mismatches"] == []


def test_usage_errors_exit_2(tmp_path, state_dir):
    cfg = write_config(tmp_path)
    out = run_cli("--config", str(cfg), "up", "--set", "window=big")
    assert out.returncode == 2 and "knob 'window'" in out.stderr and "hint:" in out.stderr
    out = run_cli("--config", str(cfg), "up", "--preset", "nope")
    assert out.returncode == 2 and "b8-t4-w2048" in out.stderr
    out = run_cli("--config", str(cfg), "up", "--set", "frob=1")
    assert out.returncode == 2 and "unknown knob" in out.stderr


def test_failed_start_exits_1_with_reason(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.5", "--sim-fail-at", "load"))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 1
    assert "server failed:" in out.stderr and "--- last log lines ---" in out.stderr
    assert status_json(cfg)["phase"] == "failed"


def test_doctor_on_the_simulator(tmp_path, state_dir):
    cfg = write_config(tmp_path)
    out = run_cli("--config", str(cfg), "doctor")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[ok  ] server --help" in out.stdout
    assert "window -> --speculative-draft-window-size" in out.stdout
    assert "[ok  ] grading sandbox: bwrap: bubblewrap" in out.stdout
    for layer in ("no capabilities", "seccomp filter", "kernel knobs", "sized filesystems", "hidden tests"):
        assert f"[ok  ]   {layer}: " in out.stdout
    assert ("[ok  ]   unprivileged id: answers run as host uid" in out.stdout) is (os.geteuid() == 0)


def test_doctor_fails_grading_without_bubblewrap_and_says_how_to_fix_it(tmp_path, state_dir):
    cfg = write_config(tmp_path)
    out = run_ddtune("--config", str(cfg), "doctor", PATH=path_without_bwrap(tmp_path / "bin"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert ("[FAIL] grading sandbox: grading needs bubblewrap, and here bwrap not installed "
            "(fix: install bubblewrap (apt-get install bubblewrap;") in out.stdout


def test_doctor_names_a_bad_config(tmp_path, state_dir):
    path = tmp_path / "bad.toml"
    path.write_text('[server]\nport = "x"\n')
    out = run_cli("--config", str(path), "doctor")
    assert out.returncode == 1 and "[FAIL] config" in out.stdout and "port = 30000" in out.stdout


def test_a_knob_the_server_ignores_makes_up_and_restart_exit_3(tmp_path, state_dir):
    # the seed's pain: the window reaches the server through a route it ignores, so the draft
    # runner says draft_window_size=None; a script must not carry on measuring the wrong config
    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text() + '[knobs.map]\nwindow = { env = "DDTUNE_TEST_IGNORED_WINDOW" }\n')
    try:
        up = run_ddtune("--config", str(cfg), "up")
        assert up.returncode == 3, up.stderr
        assert "MISMATCH: window: requested 2048" in up.stderr and "--allow-mismatch" in up.stderr
        restart = run_ddtune("--config", str(cfg), "restart", "--set", "window=1024")
        assert restart.returncode == 3 and "MISMATCH: window: requested 1024" in restart.stderr
        allowed = run_ddtune("--config", str(cfg), "up", "--allow-mismatch")
        assert allowed.returncode == 0 and "MISMATCH" in allowed.stderr
    finally:
        assert run_ddtune("--config", str(cfg), "down").returncode == 0


def test_status_shows_acceptance_with_its_source_on_a_0517_server(tmp_path, state_dir, groups):
    """Chat carries no spec field before 0.5.19: status reads the counters ddtune switched on,
    and without them (extra_args name a metrics flag of their own) the decode lines' accept len."""
    import httpx

    cfg = write_config(tmp_path, extra=("--sim-version", "0.5.17", "--sim-step-ms", "1", "--sim-load-seconds", "0.1"))
    out = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    doc = status_json(cfg)
    assert "--enable-metrics" in doc["argv"]
    httpx.post(doc["url"] + "/generate", timeout=30, json={"text": "go", "sampling_params": {"max_new_tokens": 80}})
    acc = status_json(cfg)["acceptance"]
    assert acc["source"] == "counters" and acc["value"] > 1.5
    text = run_ddtune("--config", str(cfg), "status").stdout
    assert "acceptance: " in text and "(from counters: the server's lifetime)" in text
    assert run_ddtune("--config", str(cfg), "down").returncode == 0


def test_status_acceptance_falls_back_to_the_decode_lines_without_metrics(tmp_path):
    from types import SimpleNamespace

    from tests.helpers import free_port
    from backends.server.status_report import server_acceptance

    log = tmp_path / "server.log"
    line = ("[2026-12-01 19:43:{s:02d}] Decode batch, #running-req: {n}, #token: {t}, token usage: 0.01, "
            "accept len: {a:.2f}, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 0")
    log.write_text("\n".join(line.format(s=s, n=n, t=t, a=a) for s, n, t, a in
                             ((10, 8, 900, 4.0), (11, 2, 300, 2.0), (12, 8, 0, 4.0))) + "\n")
    state = SimpleNamespace(argv=("x", "--speculative-algorithm", "DFLASH"), log_path=str(log),
                            url=f"http://127.0.0.1:{free_port()}")  # nothing listens: no /metrics
    acc = server_acceptance(state)
    assert acc is not None and acc.source == "log" and acc.value == round((4 * 8 + 2 * 2 + 4 * 8) / 18, 4)
    assert acc.to_json()["weight"] == "#running-req (verify calls per line)"
    assert server_acceptance(SimpleNamespace(argv=("x",), log_path=str(log), url=state.url)) is None


def test_ctrl_c_mid_restart_leaves_the_new_server_running_and_says_so(tmp_path, state_dir, groups):
    """Issue 22 item 5: SIGINT to a real `ddtune restart` mid-start. The new server keeps starting;
    the CLI says which pid and how to get back, status says nobody follows it, `up` re-attaches."""
    import signal
    import subprocess

    import psutil

    from tests.helpers import REPO, ddtune_cmd, ddtune_env

    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "4"))
    assert run_ddtune("--config", str(cfg), "up").returncode == 0
    old = groups.track_state()["pid"]
    proc = subprocess.Popen(ddtune_cmd("--config", str(cfg), "restart", "--set", "window=1024"), env=ddtune_env(),
                            cwd=REPO, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:  # until the new server loads its weights
        seen.append(line)
        groups.track_state()
        if "loading-weights" in line:
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130, "".join(seen) + rest
    state = groups.track_state()
    new = state["pid"]
    gone = lambda pid: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert new != old and not gone(new) and gone(old)
    assert f"the new server pid {new} keeps starting" in rest and "`ddtune down` stops it" in rest, rest
    doc = status_json(cfg)
    assert doc["pid"] == new and doc["phase"] == "starting" and "not followed" in doc["reason"]
    back = run_ddtune("--config", str(cfg), "up")
    assert back.returncode == 0 and f"re-attached to pid {new}" in back.stderr, back.stderr
    doc = status_json(cfg)
    assert doc["phase"] == "ready" and doc["reason"] is None and doc["knobs"]["window"] == 1024
    assert run_ddtune("--config", str(cfg), "down").returncode == 0

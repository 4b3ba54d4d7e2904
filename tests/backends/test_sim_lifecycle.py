"""Simulator startup, readiness, faults and shutdown as real processes, signals and sockets."""

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from tests.helpers import REPO, ddtune_env, free_port, run_ddtune
from tests.simproc import READY_LINE

DFLASH = ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "demo-draft",
          "--speculative-draft-window-size", "2048")


def refused(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(5)
        return s.connect_ex(("127.0.0.1", port)) != 0


def group_alive(pgid: int) -> list[int]:
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.info["pid"]) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.info["pid"])
        except (ProcessLookupError, psutil.Error):
            pass
    return out


def wait_until(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_startup_log_in_sglang_order(start_sim):
    sim = start_sim(*DFLASH)
    text = sim.text()
    order = ["server_args={", "Load weight begin.", "Multi-thread loading shards:", "type=Qwen3ForCausalLM",
             "type=DFlashDraftModel",
             "Initialized DFLASH draft runner. attention_backend=flashinfer, model=DFlashDraftModel, "
             "block_size=16, draft_window_size=2048, compact_cache=True",
             "KV Cache is allocated. dtype: torch.bfloat16, #tokens:", "Memory pool end.",
             "Capture target verify CUDA graph begin.", "Capturing batches (bs=",
             "Capture target verify CUDA graph end.",
             "max_total_num_tokens=", "Engine startup timings (s):",
             f"INFO:     Started server process [{sim.pid}]", "INFO:     Waiting for application startup.",
             "INFO:     Application startup complete.",
             f"INFO:     Uvicorn running on http://127.0.0.1:{sim.port} (Press CTRL+C to quit)",
             '"GET /model_info HTTP/1.1" 200', "Prefill batch, #new-seq: 1", READY_LINE]
    positions = [text.find(s) for s in order]
    assert -1 not in positions, [s for s, p in zip(order, positions, strict=True) if p == -1]
    assert positions == sorted(positions)
    assert text.count("\rMulti-thread loading shards:") >= 5  # tqdm redraws with \r
    assert "Initialized DDTree worker" not in text


def test_ddtree_and_old_release_lines(start_sim):
    tree = start_sim("--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "d",
                     "--speculative-ddtree-budget", "8", env={"SGLANG_DDTREE_MAX_TOPK": "4"})
    assert "Initialized DDTree worker. block_size=16, tree_budget=8, max_tree_nodes=9" in tree.text()
    old = start_sim("--sim-version", "0.5.11", "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path",
                    "d", "--speculative-dflash-draft-window-size", "1024")
    text = old.text()
    assert "server_args=ServerArgs(" in text and "Loading safetensors checkpoint shards:" in text
    assert "Capture cuda graph begin. This can take up to several minutes." in text
    assert "draft_window_size=1024, compact_cache=True" in text
    assert httpx.get(old.url + "/ready", timeout=30).status_code == 404
    meta = httpx.post(old.url + "/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 4}},
                      timeout=30).json()["meta_info"]
    assert "spec_accepted_drafts" in meta and "spec_num_correct_drafts" not in meta
    plain = start_sim("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d")
    assert "draft_window_size=None, compact_cache=False" in plain.text()


@pytest.mark.parametrize("phase, holding", [("load", "Load weight begin."),
                                            ("capture", "Capture target verify CUDA graph begin."),
                                            ("warmup", '"GET /model_info HTTP/1.1" 200')])
def test_a_hang_holds_its_phase_until_sigusr1_then_the_start_goes_on(start_sim, phase, holding):
    """What a test uses to hold a phase as long as it needs (the sweep screen's lanes in loading-weights)."""
    sim = start_sim(*DFLASH, "--sim-hang-at", phase, wait=None)
    sim.wait_for(holding)
    assert READY_LINE not in sim.text() and sim.proc.poll() is None
    sim.signal(signal.SIGUSR1)
    sim.wait_for(READY_LINE)


def test_readiness_refused_then_models_before_health_then_ready(start_sim):
    sim = start_sim(*DFLASH, "--sim-hang-at", "capture", wait=None)
    sim.wait_for("Capture target verify CUDA graph begin.")
    assert refused(sim.port)  # nothing listens while loading
    sim.kill_group()
    sim = start_sim(*DFLASH, "--sim-hang-at", "warmup", wait="listening")
    assert wait_until(lambda: not refused(sim.port))
    assert httpx.get(sim.url + "/v1/models", timeout=30).status_code == 200
    assert httpx.get(sim.url + "/model_info", timeout=30).status_code == 200
    assert httpx.get(sim.url + "/health", timeout=30).status_code == 503
    assert httpx.get(sim.url + "/ready", timeout=30).status_code == 503
    assert READY_LINE not in sim.text()
    up = start_sim(*DFLASH)
    assert httpx.get(up.url + "/health", timeout=30).status_code == 200
    assert httpx.get(up.url + "/ready", timeout=30).status_code == 200


def test_help_lists_flags_in_sglang_style():
    out = run_ddtune("sim", "--help")
    assert out.returncode == 0
    for flag in ("--speculative-draft-window-size SPECULATIVE_DRAFT_WINDOW_SIZE", "--speculative-ddtree-budget",
                 "--speculative-dflash-enable-ddtree", "--speculative-num-draft-tokens", "--decode-log-interval",
                 "--enable-metrics", "--max-running-requests", "--reasoning-parser", "--api-key", "--sim-step-ms"):
        assert flag in out.stdout
    assert "--speculative-dflash-draft-window-size" not in out.stdout
    old = run_ddtune("sim", "--sim-version", "0.5.11", "--help")
    assert "--speculative-dflash-draft-window-size" in old.stdout


@pytest.mark.parametrize("args,code,text", [
    (["--bogus"], 2, "unrecognized arguments: --bogus"),
    (["--port", "x"], 2, "argument --port: invalid int value: 'x'"),
    (["--speculative-algorithm", "DFLASH"], 1,
     "ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path."),
    (["--speculative-algorithm", "MAGIC", "--speculative-draft-model-path", "d"], 1,
     "ValueError: Unknown speculative algorithm name: MAGIC"),
    ([*DFLASH[:4], "--speculative-draft-window-size", "8"], 1,
     "window_size=8, block_size=16."),
    ([*DFLASH[:4], "--speculative-dflash-draft-window-size", "4096"], 2, "unrecognized arguments"),
])
def test_bad_input_fails_like_sglang_and_listens_nowhere(args, code, text):
    port = free_port()
    out = run_ddtune("sim", "--model-path", "m", "--port", str(port), "--sim-load-seconds", "0.2", *args)
    assert out.returncode == code, out.stderr
    assert text in out.stderr
    assert refused(port)


@pytest.mark.parametrize("phase,text", [
    ("load", "torch.OutOfMemoryError: CUDA out of memory."),
    ("capture", "Capture cuda graph failed: CUDA out of memory."),
    ("warmup", "Initialization failed. warmup error:"),
])
def test_fail_at_phase_prints_fatal_and_dies(start_sim, phase, text):
    sim = start_sim(*DFLASH, "--sim-fail-at", phase, "--sim-children", "1", wait=None)
    rc = sim.wait_exit()
    log = sim.text()
    assert rc == -signal.SIGKILL  # SGLang's kill_process_tree SIGKILLs itself
    assert text in log and READY_LINE not in log
    if phase == "capture":
        assert "Possible solutions:" in log
    assert ("Uvicorn running" in log) == (phase == "warmup")
    assert wait_until(lambda: not group_alive(sim.pid))
    assert refused(sim.port)


def test_taken_port_fails_after_loading_with_exit_3(start_sim):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        sim = start_sim(*DFLASH, port=port, wait=None)
        rc = sim.wait_exit()
    log = sim.text()
    assert rc == 3
    assert (f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {port}): "
            "address already in use") in log
    assert log.find("Capture draft verify CUDA graph end.") < log.find("[Errno 98]")


def test_sigterm_exits_cleanly_with_children_gone(start_sim):
    sim = start_sim("--sim-children", "2")
    kids = [c.pid for c in psutil.Process(sim.pid).children()]
    assert len(kids) == 2
    assert all(os.getpgid(k) == sim.pid for k in kids)
    assert any("sglang::scheduler_TP0" in " ".join(psutil.Process(k).cmdline()) for k in kids)
    sim.signal(signal.SIGTERM)
    assert sim.wait_exit() == 0
    assert wait_until(lambda: not group_alive(sim.pid))
    assert refused(sim.port)


def test_sigkill_of_parent_leaves_orphans_until_group_kill(start_sim):
    sim = start_sim("--sim-children", "1", "--sim-orphan-seconds", "120")
    kid = psutil.Process(sim.pid).children()[0].pid
    os.kill(sim.pid, signal.SIGKILL)
    sim.wait_exit()
    time.sleep(0.5)  # give an orphan the chance to vanish on its own (it must not)
    assert psutil.pid_exists(kid) and psutil.Process(kid).status() != psutil.STATUS_ZOMBIE
    os.killpg(sim.pid, signal.SIGKILL)
    assert wait_until(lambda: not group_alive(sim.pid))


def test_drain_keeps_answering_after_sigterm(start_sim):
    sim = start_sim("--sim-drain-seconds", "3", "--sim-step-ms", "1")
    sim.signal(signal.SIGTERM)
    r = httpx.post(sim.url + "/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 5}}, timeout=30)
    assert r.status_code == 200 and r.json()["meta_info"]["completion_tokens"] == 5
    assert httpx.get(sim.url + "/v1/models", timeout=30).status_code == 200
    assert httpx.get(sim.url + "/health", timeout=30).status_code == 503  # SGLang: 503 while shutting down
    assert sim.proc.poll() is None
    assert sim.wait_exit() == 0
    assert refused(sim.port)


def test_hang_at_shutdown_ignores_sigterm(start_sim):
    sim = start_sim("--sim-hang-at", "shutdown")
    sim.signal(signal.SIGTERM)
    r = httpx.get(sim.url + "/v1/models", timeout=30)
    assert r.status_code == 200 and sim.proc.poll() is None
    os.killpg(sim.pid, signal.SIGKILL)
    assert sim.wait_exit() == -signal.SIGKILL


def test_sigterm_during_loading_exits_promptly(start_sim):
    sim = start_sim("--sim-hang-at", "load", "--sim-children", "1", wait=None)
    sim.wait_for("Load weight begin.")
    sim.signal(signal.SIGTERM)
    assert sim.wait_exit() == 0
    assert wait_until(lambda: not group_alive(sim.pid))


def test_python_m_backends_sim_matches_ddtune_sim():
    port = free_port()
    out = subprocess.run([sys.executable, "-m", "backends.sim", "--model-path", "m", "--port", str(port),
                          "--speculative-algorithm", "DFLASH"], cwd=REPO, env=ddtune_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "requires setting --speculative-draft-model-path" in out.stderr

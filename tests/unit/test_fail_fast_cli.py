"""Fail fast and say why (issue 12, item 5), as real processes on real sockets and the simulator:
an endpoint nobody listens at, ETAs only from this server's own starts, `down` of an endpoint and of
a server that died while starting, and the SGLang version doctor reports."""

from __future__ import annotations

import json
import re
import subprocess

from tests.backends.lifecycle_support import FAST, read_state, write_config
from tests.helpers import COMMAND_S, REPO, ddtune_cmd, ddtune_env, free_port, run_ddtune


def progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.match(r"\[\s*\d+\.\ds\]", line)]


def test_endpoint_with_nothing_listening_says_refused_and_fails_after_the_grace(tmp_path, state_dir):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # the hour-long ready timeout stays: only the grace may end this (the subprocess timeout guards it)
    cfg = write_config(tmp_path, backend="endpoint", url=url, connect_grace_s=2, ready_timeout_s=3600)
    out = run_ddtune("--config", str(cfg), "up")
    assert out.returncode == 1, out.stderr
    assert f"connection refused at {url}" in out.stderr
    assert f"ddtune: server failed: connection refused at {url}: nothing answered there for 2 s " \
           "([server] connect_grace_s)" in out.stderr
    assert "ready_timeout_s" not in out.stderr
    assert not any("ETA" in line for line in progress_lines(out.stderr)), out.stderr  # no history: no ETA
    assert read_state(state_dir)["phase"] == "failed"

    down = run_ddtune("--config", str(cfg), "down")
    assert down.returncode == 2, down.stderr  # bad usage: ddtune never stops a server it only attached to
    assert f"cannot stop an endpoint server: ddtune only attaches to {url}" in down.stderr
    assert "pid None" not in down.stderr and "stopped" not in down.stderr
    sim_cfg = write_config(tmp_path, name="sim.toml")  # a config for the simulator: the record still wins
    down = run_ddtune("--config", str(sim_cfg), "down")
    assert down.returncode == 2 and f"only attaches to {url}" in down.stderr and "pid None" not in down.stderr


def test_endpoint_that_starts_listening_within_the_grace_is_attached(tmp_path, state_dir, start_sim):
    port = free_port()
    cfg = write_config(tmp_path, backend="endpoint", url=f"http://127.0.0.1:{port}", connect_grace_s=60)
    # the endpoint is a plain (not speculative) simulator, so the requested window mismatches: beside
    # the point here, which is the connect grace
    up = subprocess.Popen(ddtune_cmd("--config", str(cfg), "up", "--allow-mismatch"), env=ddtune_env(), cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "connection refused at" in _read_until(up, "connection refused at")
        start_sim("--sim-load-seconds", "0.3", port=port)
        _, stderr = up.communicate(timeout=COMMAND_S)
    finally:
        up.kill()
        up.wait()
    assert up.returncode == 0, stderr
    assert "ready" in stderr and "failed" not in stderr


def _read_until(proc: subprocess.Popen, needle: str) -> str:
    seen = ""
    for line in proc.stderr:  # type: ignore[union-attr]
        seen += line
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never printed:\n{seen}")


def test_eta_comes_from_this_servers_own_starts(tmp_path, state_dir, groups):
    """First start of a server: no ETA. Its second start: an ETA. A server that differs (another
    flag, the same model name) or an endpoint named like it borrows none of those times."""
    cfg = write_config(tmp_path, extra=FAST)
    first = run_ddtune("--config", str(cfg), "restart")
    groups.track_state()
    assert first.returncode == 0, first.stderr
    assert not any("ETA" in line for line in progress_lines(first.stderr)), first.stderr
    second = run_ddtune("--config", str(cfg), "restart")
    groups.track_state()
    assert second.returncode == 0, second.stderr
    assert any("ETA" in line for line in progress_lines(second.stderr)), second.stderr
    assert run_ddtune("--config", str(cfg), "down").returncode == 0

    other = write_config(tmp_path, extra=(*FAST, "--sim-seed", "7"), name="other.toml")  # same model "demo"
    third = run_ddtune("--config", str(other), "restart")
    groups.track_state()
    assert third.returncode == 0, third.stderr
    assert not any("ETA" in line for line in progress_lines(third.stderr)), third.stderr
    assert run_ddtune("--config", str(other), "down").returncode == 0

    endpoint = write_config(tmp_path, backend="endpoint", url=f"http://127.0.0.1:{free_port()}",
                            connect_grace_s=1, name="endpoint.toml")
    attach = run_ddtune("--config", str(endpoint), "up")
    assert attach.returncode == 1
    assert not any("ETA" in line for line in progress_lines(attach.stderr)), attach.stderr
    records = [json.loads(line) for line in (state_dir / "startups.jsonl").read_text().splitlines()]
    assert [r["server"].split(":")[0] for r in records] == ["sim", "sim", "sim"]  # an attach times no start
    assert len({r["server"] for r in records}) == 2 and {r["model"] for r in records} == {"demo"}


def test_down_after_a_start_that_died_says_it_had_exited(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=(*FAST, "--sim-fail-at", "load"))
    up = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert up.returncode == 1 and "server failed:" in up.stderr
    pid = read_state(state_dir)["pid"]
    down = run_ddtune("--config", str(cfg), "down")
    assert down.returncode == 0, down.stderr
    assert f"pid {pid} had already exited" in down.stderr and "its start had failed" in down.stderr
    assert "stopped pid" not in down.stderr
    assert read_state(state_dir) is None


def doctor_version(cfg) -> str:
    out = run_ddtune("--config", str(cfg), "doctor")
    line = next(line for line in out.stdout.splitlines() if line.startswith("[ok  ] SGLang: ")
                or line.startswith("[warn] SGLang: "))
    assert "unknown" not in line, line
    return line


def test_doctor_reports_the_version_the_console_shows(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=(*FAST, "--sim-version", "0.5.11"))
    assert "SGLang: 0.5.11 (imitated by the simulator" in doctor_version(cfg)  # nothing runs yet
    up = run_ddtune("--config", str(cfg), "up")
    groups.track_state()
    assert up.returncode == 0, up.stderr
    url = read_state(state_dir)["url"]
    assert doctor_version(cfg) == f"[ok  ] SGLang: 0.5.11 (/server_info of the running server at {url})"
    endpoint = write_config(tmp_path, backend="endpoint", url=url, name="endpoint.toml")
    assert doctor_version(endpoint) == f"[ok  ] SGLang: 0.5.11 (/server_info of the running server at {url})"
    assert run_ddtune("--config", str(cfg), "down").returncode == 0

    standin = write_config(tmp_path, backend="sglang", name="sglang.toml")  # sglang 0.5.23, installed
    assert "[ok  ] SGLang: 0.5.23 (the sglang package installed for " in doctor_version(standin)

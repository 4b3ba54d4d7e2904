"""ddtune's headless loop on a real llama.cpp server: up (the clamp shown), restart verified, status
naming the engine, bench acceptance against the server's own counters, load windows, down."""

from __future__ import annotations

import json

import httpx
import pytest

from backends.launch.process import port_owner
from backends.logs.acceptance import counter_acceptance, parse_counters
from tests.llamacpp_tier.conftest import BUILD, write_llama_config

pytestmark = pytest.mark.llamacpp


def test_up_restart_status_bench_load_down(llama, tiny):
    write_llama_config(llama.root, tiny, llama.port, n_max=16)
    up = llama.run("up")
    assert up.returncode == 3, up.stderr  # ready, but n_max is not what was asked
    assert f"engine: llama.cpp {BUILD}" in up.stderr
    assert ("MISMATCH: n_max: requested 16, server says 15 (clamped: above the draft's trained block size - 1)"
            in up.stderr)
    for phase in ("starting-process", "loading-weights", "warmup", "ready"):
        assert f"] {phase}" in up.stderr, up.stderr

    restart = llama.run("restart", "--set", "n_max=8")
    assert restart.returncode == 0, restart.stderr
    assert "effective: n_max=8" in restart.stderr and "MISMATCH" not in restart.stderr
    status = llama.json("status")
    assert status["engine"] == f"llama.cpp {BUILD}" and status["phase"] == "ready"
    assert [(c["name"], c["status"], c["effective"]) for c in status["checks"]] == [
        ("n_max", "verified", 8), ("threads", "verified", 1)]
    pid = status["pid"]
    assert port_owner(llama.port).pid == pid

    before = parse_counters(llama.metrics())
    # the tiny target says one token for ever (so that the agreeing draft agrees): every answer is a loop,
    # which bench leaves out of acceptance unless asked; it is asked, to hold the per-request figures.
    # --contexts 0: the prompts as written, so no sizing request runs between the counters' two reads
    bench = llama.json("bench", "--contexts", "0", "--concurrency", "1", "--max-tokens", "256",
                       "--requests-per-cell", "4", "--warmup", "0", "--include-degenerate")
    after = parse_counters(llama.metrics())
    (cell,) = bench["cells"]
    assert cell["degenerate"]["count"] == 4  # each answer named a loop, and counted as asked
    acceptance = cell["acceptance"]
    counters = counter_acceptance(before, after)
    assert acceptance["source"] == "request" and counters is not None
    assert abs(acceptance["total"] / counters - 1) <= 0.03, (acceptance, counters)
    assert 6.0 < acceptance["total"] <= 9.0  # n_max 8 on an agreeing draft: nearly 9 tokens per target step
    assert bench["run"]["server"]["version"] == BUILD
    assert bench["run"]["server"]["server_info"]["engine"] == "llama.cpp"

    drafts = llama.json("status")["acceptance"]["drafts"]  # llama.cpp's own counters, per draft position
    assert len(drafts["accepted_per_position"]) == 8 and drafts["accepted_per_position"][0] > 0
    assert drafts["rate"] == 1.0

    load = llama.json("load", "--concurrency", "1", "--duration", "3", "--window", "1", "--max-tokens", "64")
    assert load["errors"] == 0 and load["finished"] > 0 and len(load["windows"]) >= 2
    assert {w["acceptance_source"] for w in load["windows"] if w["acceptance"] is not None} == {"request"}
    assert load["acceptance"]["source"] == "request" and load["acceptance"]["total"] > 6.0

    down = llama.run("down")
    assert down.returncode == 0, down.stderr
    assert port_owner(llama.port) is None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{llama.url}/health", timeout=2)
    assert json.loads(llama.run("status", "--json").stdout)["phase"] == "stopped"


def test_a_removed_flag_is_refused_before_anything_starts(llama, tiny):
    llama.config.write_text(llama.config.read_text().replace(
        "[knobs]", 'extra_args = ["--draft-max", "8"]\n\n[knobs]'))
    out = llama.run("up")
    assert out.returncode == 2, out.stderr
    assert "--draft-max was removed from llama.cpp" in out.stderr and "--spec-draft-n-max" in out.stderr
    assert port_owner(llama.port) is None


def test_a_users_llama_server_binary_is_launched_and_its_help_kept_per_build(llama, tiny, state_dir):
    """``[server] binary``: a llama-server of the user's (here a script that runs the same real server)
    is launched as it is, its build read from ``--version`` and its ``--help`` cached under it."""
    import sys

    binary = llama.root / "llama-server"
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} -P -m backends.drivers.llamacpp_launcher \"$@\"\n")
    binary.chmod(0o755)
    llama.config.write_text(llama.config.read_text().replace("[knobs]", f'binary = "{binary}"\n\n[knobs]'))
    up = llama.run("up")
    assert up.returncode == 0, up.stderr
    assert "launched pid" in up.stderr and f"{binary} --model {tiny.target}" in up.stderr
    assert f"engine: llama.cpp {BUILD}" in up.stderr
    assert (state_dir / "help" / f"llamacpp-{BUILD}.txt").is_file()
    assert llama.run("down").returncode == 0
    assert port_owner(llama.port) is None

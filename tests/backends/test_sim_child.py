"""The simulator ddtune starts imports ddtune where ddtune itself was found, not from the user's working
directory, and gets no cwd or PYTHONPATH of ddtune's making; a real server's interpreter gets none of
ddtune's PYTHONPATH (issue 23, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from backends.drivers.llamacpp import LlamaCppDriver
from backends.drivers.spawn import SGLangDriver, SimDriver
from backends.drivers.systemd import SystemdDriver
from backends.knobs.config import ServerConfig
from tests.backends.lifecycle_support import write_config

DECOY = "import pathlib\npathlib.Path({marker!r}).write_text(__name__)\nraise SystemExit(3)\n"


def decoys(folder: Path) -> Path:
    """A working directory holding packages named as ddtune's: each records that it ran, and exits."""
    for name in ("backends", "workloads", "tui", "presets"):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(DECOY.format(marker=str(folder / "decoy-ran")))
    return folder


def test_the_simulator_started_from_a_folder_of_decoys_runs_ddtune_s(tmp_path, state_dir, groups):
    # `python -m` would put the working directory first on sys.path: without -P, the decoy backends
    # package would run in place of the simulator
    cwd = decoys(tmp_path / "work")
    cfg = write_config(tmp_path)
    ddtune = Path(sys.executable).with_name("ddtune")  # the console script, as a user runs it
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the install alone finds ddtune

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ddtune), "--config", str(cfg), *argv], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=180)

    up = run("up")
    state = groups.track_state()
    assert up.returncode == 0, up.stderr
    pid = state["pid"]
    assert os.readlink(f"/proc/{pid}/cwd") == str(cwd)  # the user's directory, never ddtune's
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert not [e for e in environ if e.startswith(b"PYTHONPATH=")]
    assert "-m backends.sim" in " ".join(state["argv"])
    down = run("down")
    assert down.returncode == 0, down.stderr
    assert not (cwd / "decoy-ran").exists()


def test_a_real_server_gets_no_pythonpath_of_ddtune_s_and_the_simulator_keeps_it(monkeypatch):
    # ddtune's PYTHONPATH says where ddtune was found: the simulator is ddtune and imports it the same
    # way; SGLang's interpreter gets a PYTHONPATH from [server] env only
    monkeypatch.setenv("PYTHONPATH", "/where/ddtune/was/found")
    sglang = ServerConfig(backend="sglang", python="/opt/sglang/bin/python")
    assert "PYTHONPATH" not in SGLangDriver(sglang).server_env()
    assert "PYTHONPATH" not in SystemdDriver(ServerConfig(backend="systemd")).server_env()  # its --help, here
    own = ServerConfig(backend="sglang", env={"PYTHONPATH": "/opt/sglang-src/python"})
    assert SGLangDriver(own).server_env()["PYTHONPATH"] == "/opt/sglang-src/python"
    assert SimDriver(ServerConfig()).server_env()["PYTHONPATH"] == "/where/ddtune/was/found"
    # llama.cpp: the extra's launcher is ddtune too; the user's own llama-server binary is not
    launcher = ServerConfig(backend="llamacpp")
    assert LlamaCppDriver(launcher).server_env()["PYTHONPATH"] == "/where/ddtune/was/found"
    binary = ServerConfig(backend="llamacpp", binary="/opt/llama/llama-server")
    assert "PYTHONPATH" not in LlamaCppDriver(binary).server_env()
    monkeypatch.delenv("PYTHONPATH")
    assert "PYTHONPATH" not in SimDriver(ServerConfig()).server_env()

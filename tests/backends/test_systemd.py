"""systemd backend: the commands and the drop-in it builds (systemd itself cannot run here)."""

import asyncio
import subprocess

from backends.knobs.config import ServerConfig
from backends.knobs.plan import LaunchPlan
from backends.drivers.systemd import (
    SystemdDriver, dropin_path, dropin_text, journalctl_follow, systemctl,
)

PLAN = LaunchPlan(argv=("/opt/venv/bin/python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B",
                        "--speculative-draft-window-size", "2048"),
                  env={"SGLANG_DDTREE_MAX_TOPK": "4"}, routes={}, algorithm="DFLASH", block_size=16)


def test_systemctl_and_journalctl_commands():
    assert systemctl(False, "restart", "sglang.service") == ["systemctl", "restart", "sglang.service"]
    assert systemctl(True, "show", "-p", "MainPID", "--value", "sg") == \
        ["systemctl", "--user", "show", "-p", "MainPID", "--value", "sg"]
    assert journalctl_follow("sg.service", False) == ["journalctl", "-u", "sg.service", "-f", "-o", "cat"]
    assert journalctl_follow("sg", True, "2026-11-30 09:00:00")[:2] == ["journalctl", "--user"]


def test_dropin_paths(tmp_path):
    assert str(dropin_path("sglang", False)) == "/etc/systemd/system/sglang.service.d/ddtune.conf"
    assert dropin_path("sglang.service", True).parts[-3:] == ("user", "sglang.service.d", "ddtune.conf")
    assert dropin_path("x", False, str(tmp_path / "k.conf")) == tmp_path / "k.conf"


def test_dropin_replaces_execstart_and_sets_env():
    text = dropin_text(PLAN)
    lines = text.splitlines()
    assert "[Service]" in lines
    assert lines.index("ExecStart=") < lines.index(
        "ExecStart=/opt/venv/bin/python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
        "--speculative-draft-window-size 2048")
    assert 'Environment="SGLANG_DDTREE_MAX_TOPK=4"' in lines


def test_start_runs_reload_start_and_reads_main_pid(tmp_path):
    calls = []

    def run(argv):
        calls.append(argv)
        out = "MainPID=0\n" if "show" in argv else ""
        return subprocess.CompletedProcess(argv, 0, out, "")

    config = ServerConfig(backend="systemd", unit="sglang.service", user=True, knob_file=str(tmp_path / "d.conf"))
    backend = SystemdDriver(config, run=run)
    state = asyncio.run(backend.start(PLAN))
    assert calls == [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "start", "sglang.service"],
                     ["systemctl", "--user", "show", "-p", "MainPID", "--value", "sglang.service"]]
    assert (tmp_path / "d.conf").read_text() == dropin_text(PLAN)
    assert state.pid is None and state.unit == "sglang.service" and state.backend == "systemd"
    asyncio.run(backend.stop(state))
    assert calls[-1] == ["systemctl", "--user", "stop", "sglang.service"]


def test_failed_systemctl_is_a_server_error(tmp_path):
    from backends.core.errors import ServerError

    def run(argv):
        return subprocess.CompletedProcess(argv, 5, "", "Unit sglang.service not found.")

    backend = SystemdDriver(ServerConfig(backend="systemd", unit="sglang.service", knob_file=str(tmp_path / "d")),
                             run=run)
    try:
        asyncio.run(backend.start(PLAN))
    except ServerError as exc:
        assert "not found" in exc.message and "exit 5" in exc.message
    else:
        raise AssertionError("expected ServerError")

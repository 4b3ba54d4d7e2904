"""ddtune gpu: the headless view, as a real process (no driver here; a fake pynvml on PYTHONPATH for devices)
and its rendering of attributed samples."""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from backends.machine.gpu import GpuSampler
from backends.server.gpuwatch import server_ref
from backends.server.telemetry import TelemetryStream
from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml
from tests.helpers import REPO, ddtune_cmd, ddtune_env, run_cli, run_ddtune
from tui.commands import gpu as gpu_cmd

NO_DRIVER_LINE = ("no NVIDIA driver found (libnvidia-ml.so.1 not loadable): "
                  "GPU telemetry unavailable; everything else in ddtune works")


def driver_present() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


no_driver_only = pytest.mark.skipif(driver_present(), reason="this machine has an NVIDIA driver")

FAKE_PYNVML = """\
import json, os
from tests.fake_nvml import FakeGpu, make_fake_nvml
_fake = make_fake_nvml([FakeGpu(**g) for g in json.loads(os.environ["FAKE_NVML"])])
globals().update({k: v for k, v in vars(_fake).items() if not k.startswith("__")})
"""


@pytest.fixture
def fake_nvml_env(tmp_path):
    """The fake pynvml is found on PYTHONPATH at a process's start: tests using it run ddtune as a process."""
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)

    def env(gpus):
        return {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "FAKE_NVML": json.dumps(gpus)}

    return env


@no_driver_only
def test_once_without_driver_says_so_and_exits_0(state_dir):
    out = run_cli("gpu", "--once")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == NO_DRIVER_LINE
    assert "host: CPU" in out.stdout


@no_driver_only
def test_json_without_driver(state_dir):
    out = run_cli("gpu", "--once", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)   # exactly one document on stdout
    assert doc["available"] is False
    assert doc["reason"] == "no NVIDIA driver found (libnvidia-ml.so.1 not loadable)"
    assert doc["host"]["ram_total"] > 0


def test_fake_devices_with_container_host_pids(state_dir, fake_nvml_env):
    gpus = [{"used": 20 * GIB, "procs": [[3_999_991, 9 * GIB]]}, {"used": 5 * GIB, "name": "NVIDIA H100"}]
    out = run_ddtune("gpu", "--once", "--pid", str(os.getpid()), **fake_nvml_env(gpus))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.split()[:3] == ["0", "NVIDIA", "H200"] and "20.0 /  141.0" in line for line in lines)
    assert any(line.split()[:3] == ["1", "NVIDIA", "H100"] for line in lines)
    assert any("3999991" in line and "(not visible here)" in line for line in lines)
    assert "--pid=host" in out.stdout
    assert "server: GPU memory not attributable" in out.stdout


def test_fake_devices_json(state_dir, fake_nvml_env):
    out = run_ddtune("gpu", "--once", "--json", **fake_nvml_env([{"used": GIB}] * 8))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["available"] is True and len(doc["devices"]) == 8
    assert doc["memory_used"] == 8 * GIB
    assert doc["devices"][7]["power_w"] == 312.0


@pytest.mark.parametrize("argv, words", [(["--interval", "0"], "--interval"), (["--pid", "-3"], "--pid"),
                                         (["--interval", "soon"], "--interval")])
def test_bad_usage_exits_2(argv, words, state_dir):
    out = run_cli("gpu", "--once", *argv)
    assert out.returncode == 2
    assert words in out.stderr and out.stdout == ""


def test_live_view_redraws_until_ctrl_c(state_dir, fake_nvml_env):
    proc = subprocess.Popen(ddtune_cmd("gpu", "--interval", "0.1"), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            env=ddtune_env(**fake_nvml_env([{}])))
    try:
        buf = b""
        deadline = time.monotonic() + 60
        while buf.count(b"\x1b[H\x1b[2J") < 2 and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
        assert buf.count(b"\x1b[H\x1b[2J") >= 2, (buf, proc.stderr.read() if proc.poll() is not None else "")
        assert b"NVIDIA H200" in buf
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_render_attributes_the_server(sleeper):
    gpus = [FakeGpu(used=30 * GIB, procs=[(sleeper.pid, 12 * GIB)]), FakeGpu(procs=[(sleeper.pid, 6 * GIB)])]
    stream = TelemetryStream(server=lambda: (sleeper.pid, sleeper.pid),
                             gpu=GpuSampler(nvml=make_fake_nvml(gpus), holds_gpu=lambda pid: True))
    sample = stream.sample_blocking()
    text = gpu_cmd.render_text(sample)
    assert f"server: 18.0 GiB on 2 GPUs, pids {sleeper.pid}" in text
    assert sum(1 for line in text.splitlines() if line.endswith("[server]")) == 2
    assert "[" + "#" * 4 + "." * 16 + "]" in text   # 30 of 141 GiB: 4 of 20 cells
    assert "server tree: 1 processes" in text
    doc = gpu_cmd.to_json(sample)
    assert doc["server_share"]["used_bytes"] == 18 * GIB and doc["server_pids"] == [sleeper.pid]
    json.dumps(doc)


RECORD = {"backend": "sim", "host": "127.0.0.1", "port": 30000, "url": "http://127.0.0.1:30000",
          "config_hash": "x", "knobs": {}, "log_path": None, "started_at": 1.0}


@pytest.mark.parametrize("fields, expected", [
    ({"pid": 4242, "pgid": 4242}, (4242, 4242)),
    ({"pid": 4242, "pgid": None}, (4242, None)),
    ({"pid": None, "pgid": None}, None),
])
def test_the_server_is_read_from_its_record(state_dir, fields, expected):
    (state_dir / "server.json").write_text(json.dumps({**RECORD, **fields}))
    assert server_ref(None) == expected


@pytest.mark.parametrize("content", [
    '{"pid": 4242}', json.dumps({**RECORD, "pid": 4242, "pgid": "x"}), json.dumps({**RECORD, "pid": "4242",
                                                                                    "pgid": None}),
    json.dumps({**RECORD, "pid": True, "pgid": None}), '[1, 2]', '{not json',
])
def test_a_corrupt_record_names_no_server_and_is_set_aside(state_dir, content, capsys):
    """Read through the record's one codec: what does not decode is no server (and set aside, said
    on stderr), never a pid whose memory is attributed to it."""
    (state_dir / "server.json").write_text(content)
    assert server_ref(None) is None
    assert "server.json is corrupt" in capsys.readouterr().err and not (state_dir / "server.json").exists()


def test_explicit_pid_wins_and_missing_server_json_is_none(state_dir):
    assert server_ref(None) is None
    (state_dir / "server.json").write_text('{"pid": 4242, "pgid": 4242}')
    assert server_ref(77) == (77, None)

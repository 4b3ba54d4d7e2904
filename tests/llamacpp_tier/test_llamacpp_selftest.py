"""``ddtune selftest`` on a config of only ``[server] backend = "llamacpp"``: every check passes
against a real llama.cpp server (the GPU check skips: no NVML here)."""

from __future__ import annotations

import json
import shutil

import psutil
import pytest

from tests.llamacpp_tier.conftest import BUILD

pytestmark = pytest.mark.llamacpp


def test_selftest_passes_on_a_bare_llamacpp_config(llama):
    llama.config.write_text('[server]\nbackend = "llamacpp"\n')
    out = llama.run("selftest", "--json", "--keep", timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    doc = json.loads(out.stdout)
    work = doc["work_dir"]  # its own state dir and models: no server of its tiny models may be left
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if any(work in a for a in p.info["cmdline"] or ())]
    shutil.rmtree(work, ignore_errors=True)
    assert left == []
    status = {c["name"]: c["status"] for c in doc["checks"]}
    assert status == {"build": "pass", "flags": "pass", "ready": "pass", "draft_runner": "pass", "acceptance": "pass",
                      "agree": "pass", "gpu": "skip", "knob_restart": "pass", "collapse_alarm": "pass",
                      "stop": "pass"}
    assert (doc["engine"], doc["engine_version"]) == ("llama.cpp", BUILD)
    detail = {c["name"]: c["detail"] for c in doc["checks"]}
    assert "n_max: 15, as requested" in detail["draft_runner"]
    assert "accepted per position" in detail["acceptance"]
    assert "restarted to n_max 7" in detail["knob_restart"]

"""The real-engine tier: ddtune's whole loop against real llama.cpp servers (the ``llamacpp`` extra's
xllamacpp, llama.cpp b11549 with DFlash, on the CPU) and ddtune's tiny GGUF models.

Collected only with DDTUNE_LLAMACPP_TIER=1 (``.ci/llamacpp-tier.sh`` sets it after installing the
extra): the suite's own command installs ``.[test]`` only. Under the tier nothing is optional: a
missing xllamacpp or gguf fails the tests that need them, loudly, never skips them.

Each test is a sequence of real commands on real servers (a server serves several steps: a start
costs ~1.5 s); the models are built once per worker (~0.3 s).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.helpers import ddtune_cmd, ddtune_env, free_port

collect_ignore_glob = [] if os.environ.get("DDTUNE_LLAMACPP_TIER") == "1" else ["test_*.py"]

BUILD = "b11549"  # the pinned wheel's llama.cpp build (pyproject: the llamacpp extra)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    from backends.selftest.tinymodels.gguf_tiny import build

    return build(tmp_path_factory.mktemp("gguf"))


@dataclass
class Llama:
    """One test's llama.cpp config (its own state dir and port) and a way to run ddtune on it."""

    root: Path
    config: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(ddtune_cmd("--config", str(self.config), *args), env=ddtune_env(), cwd=self.root,
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def json(self, *args: str, timeout: float = 120) -> dict:
        out = self.run(*args, "--json", timeout=timeout)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout)

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=10).text

    def preset(self, name: str, **knobs) -> str:
        path = self.root / f"{name}.toml"
        path.write_text("[knobs]\n" + "".join(f"{k} = {v}\n" for k, v in knobs.items()))
        return str(path)


def write_llama_config(root: Path, tiny, port: int, draft: str = "agree", **knobs) -> Path:
    path = root / "ddtune.toml"
    lines = ["[server]", 'backend = "llamacpp"', f'model = "{tiny.target}"',
             f'draft_model = "{tiny.agree if draft == "agree" else tiny.random}"', f"port = {port}",
             "ready_timeout_s = 60", "", "[knobs]", "threads = 1"]  # one core per server: two workers share two
    lines += [f"{k} = {v}" for k, v in knobs.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def llama(tmp_path, tiny, no_leftovers):
    """A llama.cpp config of this test; ``no_leftovers``: nothing its ddtune launched survives it."""
    port = free_port()
    return Llama(tmp_path, write_llama_config(tmp_path, tiny, port), port)

"""Shared test helpers: how to run ddtune as a real process, free ports, process cleanup."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ddtune_cmd(*args: str) -> list[str]:
    """argv that runs this checkout's ddtune in a fresh interpreter."""
    return [sys.executable, "-m", "tui.cli", *args]


def ddtune_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_ddtune(*args: str, timeout: float = 60, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ddtune_cmd(*args), env=ddtune_env(**extra_env), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

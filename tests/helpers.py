"""Shared test helpers: how to run ddtune as a real process, free ports, process cleanup."""

from __future__ import annotations

import contextlib
import os
import random
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


def free_port_run(count: int) -> int:
    """A base port whose ``count`` ports from it are free, below the kernel's ephemeral range.

    Lane servers listen on base + i. A base from ``free_port`` lies inside the ephemeral range, where
    the test's own client connections (to lane 0) are given local ports: one of them can take base + 1
    just before lane 1 binds it (seen in CI as "address already in use"). Real configs use 30000,
    below the range; so do these tests."""
    from backends.record.laneports import ephemeral_range

    low = (ephemeral_range() or (32768, 60999))[0]  # Linux's default range where /proc cannot say
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(10000, max(10001, low - count))
        try:
            with contextlib.ExitStack() as stack:
                for port in range(base, base + count):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} free ports in a row below {low}")

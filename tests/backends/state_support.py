"""Helpers for the state-dir tests: which processes a test's ddtune launched, found the way a lost
launch is found (by what their environment holds), and a fixture that leaves none running."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest


def _environ(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


def launched(state_dir: Path) -> dict[int, float]:
    """Live processes started by a ddtune of ``state_dir``: they carry a launch token and that
    DDTUNE_STATE_DIR (the server inherits ddtune's environment). pid -> create time."""
    mark = f"DDTUNE_STATE_DIR={state_dir}".encode()
    found: dict[int, float] = {}
    for proc in psutil.process_iter():
        env = _environ(proc.pid)
        if mark in env and any(e.startswith(b"DDTUNE_LAUNCH_TOKEN=") for e in env):
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found[proc.pid] = proc.create_time()
            except psutil.NoSuchProcess:
                continue
    return found


def leaders(state_dir: Path) -> list[int]:
    """The launched servers themselves: each leads its own session."""
    out = []
    for pid in launched(state_dir):
        try:
            if os.getsid(pid) == pid:
                out.append(pid)
        except ProcessLookupError:
            continue
    return sorted(out)


def kill_launched(state_dir: Path, timeout: float = 30) -> list[int]:
    """SIGKILL what launched() finds (pidfd, so a reused pid is never hit); what is left after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = launched(state_dir)
        if not left or time.monotonic() >= deadline:
            return sorted(left)
        for pid in left:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(fd)
        time.sleep(0.1)


@pytest.fixture
def no_leftovers(state_dir):
    """At teardown: nothing a ddtune of this test's state dir launched is left running."""
    yield state_dir
    left = launched(state_dir)
    kill_launched(state_dir)
    assert left == {}, f"processes left running: {sorted(left)}"

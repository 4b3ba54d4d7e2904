"""The serial sweep and search CLI tests' box: a config for the simulator backend on a free port, and
cleanup that kills whatever the test left (its ddtune processes, the server the state names)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.helpers import free_port

# the simulator's paced startup (seconds): short, as these tests restart many times and time none of it
LOAD_SECONDS = "0.05"


def cli_box(tmp_path: Path, state_dir: Path):
    """Yields a box: ``config(*sim_args)`` writes the config and returns its path; ``procs`` are
    the ddtune processes the test started (SIGKILLed by group at the end), ``state`` and ``tmp``."""

    def write(*extra_args):
        path = tmp_path / "ddtune.toml"
        args = ", ".join(json.dumps(a) for a in ("--sim-load-seconds", LOAD_SECONDS, *extra_args))
        path.write_text(f'[server]\nbackend = "sim"\nport = {free_port()}\nextra_args = [{args}]\n'
                        f'ready_timeout_s = 120\nstop_timeout_s = 10\n')
        return str(path)

    procs: list[subprocess.Popen] = []
    try:
        yield type("Box", (), {"config": staticmethod(write), "state": state_dir, "procs": procs, "tmp": tmp_path})
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(30)
        server = state_dir / "server.json"
        if server.is_file():
            pgid = json.loads(server.read_text()).get("pgid")
            if pgid:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def server_alive(state_dir: Path) -> bool:
    """Whether the server the state records still runs."""
    path = state_dir / "server.json"
    if not path.is_file():
        return False
    try:
        os.kill(json.loads(path.read_text()).get("pid"), 0)
    except (ProcessLookupError, TypeError):
        return False
    return True

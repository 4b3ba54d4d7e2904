"""Start the SGLang simulator as a real process for tests: ``start_sim(*args) -> SimProc``.

The pytest fixture ``start_sim`` (registered in tests/conftest.py) is a factory:

    def test_x(start_sim):
        sim = start_sim("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d")
        httpx.get(sim.url + "/v1/models")

Each simulator runs ``python -m backends.sim`` in its own session on a free 127.0.0.1 port, with
stdout and stderr in one log file (``sim.log``); by default the factory returns once the log says
``The server is fired up and ready to roll!``. Every process group it started is SIGKILLed at teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import COMMAND_S, REPO, SIM_LINE_S, ddtune_env, free_port

READY_LINE = "The server is fired up and ready to roll!"
LISTEN_LINE = "Uvicorn running on http://"
# the paced startup log's length unless a test names its own: every line is still written (in order),
# only the pauses between them shrink, and most tests only wait for the ready line
LOAD_SECONDS = "0.1"


@dataclass
class SimProc:
    port: int
    proc: subprocess.Popen
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_bytes().decode("utf-8", errors="replace")  # keeps \r (tqdm redraws)

    def wait_for(self, needle: str, timeout: float = SIM_LINE_S) -> str:
        """Wait until the log contains needle; fails early if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if needle in text:
                return text
            if self.proc.poll() is not None:
                text = self.text()
                if needle in text:
                    return text
                raise AssertionError(f"simulator exited with {self.proc.returncode} before {needle!r}:\n{text[-3000:]}")
            time.sleep(0.05)
        raise AssertionError(f"no {needle!r} in the simulator log within {timeout}s:\n{self.text()[-3000:]}")

    def wait_exit(self, timeout: float = COMMAND_S) -> int:
        return self.proc.wait(timeout=timeout)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def sim_argv(*args: str, port: int) -> list[str]:
    argv = list(args)
    if "--model-path" not in argv and "--model" not in argv:
        argv = ["--model-path", "demo", *argv]
    if "--port" not in argv:
        argv += ["--port", str(port)]
    if not any(a.startswith("--sim-load-seconds") for a in argv):
        argv += ["--sim-load-seconds", LOAD_SECONDS]
    return [sys.executable, "-m", "backends.sim", *argv]


def launch(*args: str, log_dir: Path, wait: str | None = "ready", env: dict[str, str] | None = None,
           port: int | None = None) -> SimProc:
    """Start a simulator; wait: 'ready', 'listening' or None (return at once)."""
    port = port if port is not None else free_port()
    if "--port" in args:
        port = int(args[list(args).index("--port") + 1])
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"sim-{port}-{time.monotonic_ns()}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(sim_argv(*args, port=port), cwd=REPO, env=ddtune_env(**(env or {})),
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    sim = SimProc(port, proc, log)
    if wait == "ready":
        sim.wait_for(READY_LINE)
    elif wait == "listening":
        sim.wait_for(LISTEN_LINE)
    return sim

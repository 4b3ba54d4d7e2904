"""Shared test helpers: how to run ddtune as a real process, free ports, process cleanup."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# How long a test waits (issue 33): about 3x the longest duration measured on a loaded 2-core box
# (load average ~11: two xdist workers beside other suites), so a broken feature fails in seconds, not
# in the minutes a `timeout=90` took. A wait that needs longer names its own bound and says why.
COMMAND_S = 30.0    # one ddtune command as a process, no measuring (up/restart: 7.6 s the longest, 2.6 s typical)
MEASURE_S = 40.0    # a command measuring on the simulator (a small bench or eval: 12.3 s the longest)
SIM_LINE_S = 10.0   # the simulator's log to show a line (its ready line: 1.3 s the longest of 38 starts)
SCREEN_S = 25.0     # a console in tmux to draw something (8.4 s the longest: the requests line under load)


def ddtune_cmd(*args: str) -> list[str]:
    """argv that runs this checkout's ddtune in a fresh interpreter."""
    return [sys.executable, "-m", "tui.cli", *args]


def ddtune_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_ddtune(*args: str, timeout: float = COMMAND_S, **extra_env: str) -> subprocess.CompletedProcess[str]:
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


# --- ddtune in this process ------------------------------------------------------------------------

_CATCHABLE = sorted(set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP})


def run_cli(*args: str, cwd: Path | str = REPO, stdin: str = "", **extra_env: str) -> subprocess.CompletedProcess[str]:
    """``tui.cli.main(args)`` in this process, as ``run_ddtune`` runs it in a fresh one: the same
    result (exit code, stdout, stderr), ~ms instead of the 0.2-0.4 s an interpreter takes to start.

    For tests where the process is not the subject (usage errors, --help, --json shapes, report/
    inspect/doctor on files). Whatever ddtune changes for its process is put back after each call,
    so a run sees what a fresh process sees and leaves nothing to the next test: the environment
    (``extra_env`` on top of this test's), the working folder, the umask (and ddtune's record of the
    user's, so the next run makes itself private again), signal handlers, the root logger, and
    sys.stdin/stdout/stderr (utf-8 streams: stdout strict, stderr backslashreplace, as Python's). A
    traceback is written to stderr with exit 1, as the interpreter would. A thread the command
    left running fails the call: a command tested here must end what it starts (one that starts a
    server or a child is tested as a process, with ``run_ddtune``)."""
    import io
    import logging
    import threading
    import traceback

    from backends.core import paths
    from tui import cli

    environ, here, handlers = dict(os.environ), os.getcwd(), {s: signal.getsignal(s) for s in _CATCHABLE}
    root = logging.getLogger()
    root_state = (list(root.handlers), root.level, logging.root.manager.disable)
    streams = sys.stdin, sys.stdout, sys.stderr
    threads = set(threading.enumerate())
    umask = os.umask(0o022)
    os.umask(umask)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
    paths._USER_UMASK = None  # a fresh process: ddtune records the user's umask and makes its own private
    try:
        os.environ.update(extra_env)
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse: usage errors, --help, --version
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if isinstance(exc.code, str):
                err.write(exc.code + "\n")
        except Exception:  # noqa: BLE001  (the interpreter's answer to an uncaught error)
            err.write(traceback.format_exc())
            code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(here)
        os.umask(umask)
        paths._USER_UMASK = None
        os.environ.clear()
        os.environ.update(environ)
        for sig, handler in handlers.items():
            if signal.getsignal(sig) is not handler and handler is not None:
                signal.signal(sig, handler)
        root.handlers[:], root.level = root_state[0], root_state[1]
        logging.disable(root_state[2])
    left = [t for t in set(threading.enumerate()) - threads if t.is_alive()]
    for thread in left:
        thread.join(timeout=5)
    running = [t.name for t in left if t.is_alive()]
    assert not running, f"ddtune {' '.join(args)} left threads running: {running}"
    return subprocess.CompletedProcess(["ddtune", *args], code, _text(out), _text(err))


def _text(stream) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")

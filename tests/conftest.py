import os
import signal
import subprocess

import pytest

from tests.backends.lifecycle_support import groups  # noqa: F401  (fixture: kills and checks the process groups a test started)
from tests.backends.state_support import no_leftovers  # noqa: F401  (fixture: nothing a test's ddtune launched is left)


def pytest_configure(config):
    """Ctrl-C and hang-up reach the programs the tests start as they reach a user's. A suite started
    in the background (``cmd &`` in a script, ``nohup``) inherits SIGINT or SIGHUP ignored, every
    child inherits that across exec, and a Python started with SIGINT ignored installs no
    KeyboardInterrupt: the tests that press Ctrl-C or close the terminal saw programs shrug it off.
    Restored here, in the main process and in each xdist worker, before anything is started."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers per core (at most 16). Most tests wait on real processes (a simulator
    loading, a tmux pane drawing, a child in a sandbox), not on the CPU: on a 2-core VM the suite
    takes ~10 min with one worker per core and ~6.5 min with two, with the same results.
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return min(2 * (len(os.sched_getaffinity(0)) or 1), 16)


@pytest.fixture(autouse=True)
def _hermetic_env(tmp_path, monkeypatch):
    """What every test, and every process it starts, inherits:

    - its own state dir and config home (neither made until something writes it): a ddtune a test runs
      without naming them must not write runs into the user's ~/.local/state/ddtune (the hostile
      bench/eval test did), read a config from ~/.config, or meet another test's records there when
      tests run side by side (pytest -n);
    - no COLUMNS or LINES: they override the real terminal size for every program that asks
      (shutil.get_terminal_size, Rich), so a program in a tmux pane or pty would draw at their size.
      pytest-xdist's workers have COLUMNS=80 LINES=24, and so may a user's shell."""
    monkeypatch.setenv("DDTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    # - the process's umask as it found it: a test that runs tui.cli.main in-process makes it private
    #   (077) for the rest of the worker, and whatever a later test builds for another uid to read
    #   (the install layouts under /usr/local/src) would be unreadable to it.
    from backends.core import paths

    umask = os.umask(0o022)
    os.umask(umask)
    yield
    os.umask(umask)
    paths._USER_UMASK = None


@pytest.fixture
def state_dir(tmp_path):
    """The test's private DDTUNE_STATE_DIR (set for the test and the processes it starts), made."""
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def start_sim(tmp_path):
    """Factory: ``start_sim(*sglang_args, wait='ready'|'listening'|None, env=None) -> SimProc``.

    See tests/simproc.py. Every simulator started is killed by process group at teardown.
    """
    from tests.simproc import launch

    started = []

    def factory(*args, wait="ready", env=None, port=None):
        sim = launch(*args, log_dir=tmp_path / "sim", wait=None, env=env, port=port)
        started.append(sim)
        if wait == "ready":
            sim.wait_for("The server is fired up and ready to roll!")
        elif wait == "listening":
            sim.wait_for("Uvicorn running on http://")
        return sim

    try:
        yield factory
    finally:
        for sim in started:
            sim.kill_group()


@pytest.fixture
def spawn():
    """``spawn(argv) -> Popen`` in its own session (stdout piped); every group in ``spawn.groups`` is
    SIGKILLed and the processes reaped at teardown. Add a pgid to ``spawn.groups`` for a process that
    made its own group."""
    started: list[subprocess.Popen] = []

    def start(argv):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
        started.append(proc)
        start.groups.append(proc.pid)
        return proc

    start.groups = []
    yield start
    for pgid in start.groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for proc in started:
        proc.wait(timeout=30)

"""A reader that goes away (`ddtune status | head -1`) ends any command quietly: no BrokenPipeError
traceback, no "Exception ignored" at exit (issue 12, item 7), and exit 0: a closed stdout is not a
failed run (issue 22, item 8). The fix lives once, in tui.cli.main."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers import REPO, ddtune_cmd, ddtune_env

LOG = str(REPO / "tests" / "data" / "logs" / "dflash_0511.log")


def run_into_closed_pipe(*args: str, stderr_too: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ddtune with stdout (and stderr) on a pipe whose reader is already closed: the first write
    meets EPIPE, every time, with no race against a `head` that has not exited yet."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    errors = write_end if stderr_too else subprocess.PIPE
    try:
        proc = subprocess.run(ddtune_cmd(*args), env=ddtune_env(), cwd=REPO, stdout=write_end, stderr=errors,
                              text=True, timeout=120)
    finally:
        os.close(write_end)
    return proc


@pytest.mark.parametrize("args, code", [
    (("status",), 0), (("status", "--json"), 0), (("inspect", LOG), 0), (("inspect", LOG, "--json"), 0),
    (("doctor",), 0),
    (("--help",), 0), (("up", "--help"), 0),  # argparse swallows the write error itself and exits 0
])
def test_closed_stdout_ends_quietly(args, code, state_dir):
    out = run_into_closed_pipe(*args)
    assert "Traceback" not in out.stderr and "BrokenPipeError" not in out.stderr, out.stderr
    assert "Exception ignored" not in out.stderr
    assert out.returncode == code  # a reader that took what it wanted (| head) is not a failure


def test_closed_stderr_too_ends_quietly(state_dir, tmp_path):
    """`ddtune inspect missing 2>&1 | head`: the error line itself meets the closed pipe; the run
    failed, and its exit status still says so."""
    out = run_into_closed_pipe("inspect", str(tmp_path / "missing.log"), stderr_too=True)
    assert out.returncode == 1


def test_a_reader_that_stays_sees_everything(state_dir):
    out = subprocess.run(ddtune_cmd("inspect", LOG), env=ddtune_env(), cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("log: ") and out.stderr == ""

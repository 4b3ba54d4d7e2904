"""Two graders at once, one in another PID namespace (a container, say), on one host: neither
touches what the other made (issue 28: one removed the other's fresh cgroups, whose pids meant
nothing in its namespace, and 10 of 60 correct answers were graded ``error``, silently)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, ddtune_env

SCRIPT = Path(__file__).with_name("pidns_grader.py")
RUNS = 25

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a grader makes cgroups and PID namespaces as root")


def test_two_graders_in_two_pid_namespaces_pass_every_correct_answer():
    unshare = shutil.which("unshare")
    assert unshare, "this test needs unshare(1) (util-linux)"
    env = ddtune_env()
    argv = [sys.executable, str(SCRIPT), str(REPO), str(RUNS)]
    graders = [subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
               for command in (argv, [unshare, "--pid", "--fork", "--mount-proc", "--kill-child", *argv])]
    for grader in graders:
        out, err = grader.communicate(timeout=240)
        assert grader.returncode == 0, err[-2000:]
        seen = json.loads(out.strip().splitlines()[-1])
        assert seen["cgroups"], "no cgroup can be made here: this proves nothing about them"
        assert [verdict for verdict, _ in seen["results"]] == ["pass"] * RUNS, seen["results"]

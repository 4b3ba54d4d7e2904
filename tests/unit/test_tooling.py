"""The maintainer's checks and the suite's own tools.

ruff (lint), mypy (types) and lint-imports (the layer contracts) run as a step of their own in
``.ci/run``, after the README's test command (they took ~30 s of worker time inside pytest); their
settings, and why each exception exists, are in pyproject.toml. ``tests.helpers.run_cli`` runs a
command in this process and puts back what the command changes for its process."""

import os
import re
import signal
import tomllib

from backends.core import paths
from tests.helpers import REPO, run_cli


def test_ci_runs_each_check_as_its_own_step_with_the_settings_in_pyproject():
    ci = (REPO / ".ci" / "run").read_text()
    lint = ci[ci.index('echo "ci: lint'):ci.index('took "lint"')]
    for tool in ("ruff check .", "mypy", "lint_imports_command"):
        assert re.search(rf"\.venv/bin/python (-m|-c) .*{tool}", lint), tool
    assert "lint_failed" in ci.rsplit("\n", 3)[-2], "the closing line's exit status counts the lint"
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]
    assert {"ruff", "mypy", "importlinter"} <= set(config)
    assert "ruff" not in (REPO / "README.md").read_text().split("<!-- ddtune:test -->")[1].split("```")[1]


def test_run_cli_puts_back_what_the_command_changes_for_its_process(tmp_path, monkeypatch):
    umask = os.umask(0o022)
    os.umask(umask)
    monkeypatch.setenv("DDTUNE_PROBE", "before")
    here = os.getcwd()
    sigint = signal.getsignal(signal.SIGINT)
    out = run_cli("--version", cwd=tmp_path, DDTUNE_PROBE="during", DDTUNE_OTHER="x")
    assert out.returncode == 0 and out.stdout.startswith("ddtune ")
    assert (os.umask(umask), os.getcwd(), os.environ["DDTUNE_PROBE"]) == (umask, here, "before")
    assert "DDTUNE_OTHER" not in os.environ and signal.getsignal(signal.SIGINT) is sigint
    assert paths.user_umask() == -1, "the next run must record the user's umask and go private again"


def test_run_cli_gives_argparse_s_exit_code_and_streams():
    out = run_cli("status", "--no-such-option")
    assert (out.returncode, out.stdout) == (2, "")
    assert "unrecognized arguments: --no-such-option" in out.stderr and "hint:" in out.stderr

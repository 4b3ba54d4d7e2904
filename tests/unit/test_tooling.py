"""The maintainer's checks, run by the suite so CI runs them: ruff (lint), mypy (types) and
lint-imports (the layer contracts). Their settings, and why each exception exists, are in
pyproject.toml; each test fails with the tool's own report."""

import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import REPO

SCRIPTS = Path(sysconfig.get_path("scripts"))  # this interpreter's venv: the pinned versions of the tools

CHECKS = {
    "ruff": ["ruff", "check", "--no-cache", "."],
    "mypy": ["mypy"],  # files, cache (.mypy_cache) and overrides from pyproject.toml
    "lint-imports": ["lint-imports", "--no-cache"],
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_check_is_clean(name):
    tool, *args = CHECKS[name]
    out = subprocess.run([str(SCRIPTS / tool), *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    command = " ".join([tool, *args])
    assert out.returncode == 0, f"`{command}` failed (exit {out.returncode}):\n{out.stdout}{out.stderr}"

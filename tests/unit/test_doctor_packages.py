"""``ddtune doctor`` names another distribution that installs one of ddtune's four top-level packages
ahead of ddtune's (issue 33, item 6; README "Install beside SGLang"). The distribution is a real one:
a tiny project built by hatchling and installed by pip into a folder put first on ``PYTHONPATH``, as
a shared environment would hold it; doctor runs as the installed ``ddtune`` script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DDTUNE = Path(sys.executable).with_name("ddtune")


def install_other(tmp_path: Path, package: str, files: dict[str, str]) -> Path:
    """A distribution named other-<package> that ships a top-level ``package``, pip-installed into a folder."""
    project = tmp_path / "project"
    (project / package).mkdir(parents=True)
    for name, text in {"__init__.py": "", **files}.items():
        (project / package / name).write_text(text)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        f'[project]\nname = "other-{package}"\nversion = "1.0"\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["{package}"]\n')
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--no-build-isolation", "--target", str(target), str(project)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return target


def doctor(tmp_path: Path, pythonpath: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([str(DDTUNE), "doctor"], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)


def test_doctor_says_nothing_of_the_packages_when_they_are_ddtune_s(tmp_path):
    out = doctor(tmp_path, None)
    assert out.stdout.startswith("[ok  ] config: ") and "] packages:" not in out.stdout, out.stdout


def test_doctor_names_the_distribution_whose_workloads_hides_ddtune_s(tmp_path):
    site = install_other(tmp_path, "workloads", {})
    out = doctor(tmp_path, str(site))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith(f"[FAIL] packages: 'workloads' is imported from {site / 'workloads'}, installed by "
                            "the distribution other-workloads 1.0, not ddtune's"), first
    assert "install ddtune in an environment of its own" in first and "pipx install ." in first
    # the checks that do not need the hidden package still run; the one that does says why it did not
    assert "[ok  ] config:" in out.stdout
    assert "[FAIL] grading sandbox: not checked" in out.stdout and "see the packages line" in out.stdout


@pytest.mark.parametrize("command", [["doctor"], ["status"]])
def test_another_presets_names_its_distribution_in_every_command(tmp_path, command):
    # presets hidden: every command stops before reading someone else's data (the help lists the knobs)
    site = install_other(tmp_path, "presets", {})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    out = subprocess.run([str(DDTUNE), *command], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"the 'presets' package found at {site / 'presets'} is not ddtune's" in out.stderr
    assert "hides ddtune's (the distribution other-presets 1.0)" in out.stderr


def test_a_distribution_behind_ddtune_s_is_named_as_a_warning(tmp_path):
    # another 'workloads' later on sys.path: ddtune's is imported, but the two share a name (one
    # environment holds both, so pip may overwrite one with the other): said, not failed
    site = install_other(tmp_path, "workloads", {})
    code = ("import sys; sys.path.append(sys.argv[1])\n"
            "from backends.core.install import foreign_packages\n"
            "from backends.server.doctor import _packages\n"
            "print(foreign_packages(('workloads', 'presets')))\n"
            "[check] = _packages(); print(check.ok, check.what, check.detail, sep='|')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    shadows, checks = out.stdout.splitlines()
    assert "Shadow(package='workloads'" in shadows and "distribution='other-workloads 1.0', hides=False" in shadows
    assert "presets" not in shadows
    assert checks.startswith("None|packages|the distribution other-workloads 1.0 also installs a top-level "
                             "'workloads' package (ddtune's is found first"), checks
    assert "install ddtune in an environment of its own" in checks

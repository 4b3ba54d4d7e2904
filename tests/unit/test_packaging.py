"""What ddtune installs and how an install finds itself (issue 23, item 5): the real wheel, built by
hatchling as ``pip install .`` builds it, holds ddtune's four packages and nothing else at the top
level; installed alone in a fresh venv it knows its version and reads its presets; the version comes
from the install's metadata, and a checkout with none says so instead of guessing."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from backends.core.paths import PACKAGES, presets_dir
from backends.core.version import UNKNOWN
from tests.helpers import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
DIST_INFO = f"ddtune-{VERSION}.dist-info"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built once for the module by hatchling's own builder."""
    from hatchling.builders.wheel import WheelBuilder

    out = tmp_path_factory.mktemp("wheel")
    built = list(WheelBuilder(str(REPO)).build(directory=str(out), versions=["standard"]))
    assert len(built) == 1
    return Path(built[0])


def names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without PYTHONPATH: what runs sees only its own interpreter's packages."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(extra)
    return env


def test_the_wheel_installs_ddtune_s_four_packages_and_nothing_else(wheel):
    # the names are generic (the README says to install ddtune in an environment of its own): no
    # fifth one may slip in, nor tests/ or benchmarks/
    assert {name.split("/")[0] for name in names(wheel)} == set(PACKAGES) | {DIST_INFO}
    assert sorted(PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]) == sorted(PACKAGES)


def test_the_wheel_carries_what_ddtune_reads_as_files(wheel):
    inside = set(names(wheel))
    shipped = {"presets/__init__.py", "presets/flavours.toml", "presets/problems/coding.toml",
               "tui/ddtune.tcss",                                  # the console's one stylesheet
               "workloads/grading/sandbox_child.py",               # read as text, run as python -c
               "backends/selftest/tinymodels/build_tiny.py"}       # run by the server's interpreter
    assert shipped <= inside, shipped - inside
    knobs = {Path(n).name for n in inside if n.startswith("presets/knobs/")}
    assert knobs == {p.name for p in (REPO / "presets" / "knobs").glob("*.toml")} and knobs
    assert not [n for n in inside if "__pycache__" in n or n.endswith(".pyc")]
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"{DIST_INFO}/METADATA").decode()
        scripts = zf.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert f"\nVersion: {VERSION}\n" in meta
    assert "ddtune = tui.cli:main" in scripts


def test_the_wheel_alone_in_a_fresh_venv_knows_its_version_and_reads_its_presets(wheel, tmp_path):
    # no dependencies: none of the three imports one, and installing Textual & co. would cost a
    # minute; the venv has no pip either (this interpreter's pip installs into it)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                           "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        # cwd: not the checkout, which must play no part
        return subprocess.run(argv, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120)

    out = run(str(venv / "bin" / "ddtune"), "--version")
    assert (out.returncode, out.stdout) == (0, f"ddtune {VERSION}\n"), out.stderr
    out = run(str(venv / "bin" / "ddtune"), "inspect", "--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: ddtune inspect"), out.stderr
    code = ("from backends.core.paths import presets_dir\n"
            "from backends.knobs.config import load_preset, preset_names\n"
            "from workloads.grading.problems import load_problems\n"
            "print(presets_dir()); print(' '.join(preset_names())); print(load_preset('b8-t4-w2048'))\n"
            "print(len(load_problems()))\n")
    out = run(str(python), "-c", code)
    assert out.returncode == 0, out.stderr
    where, presets, knobs, problems = out.stdout.splitlines()
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
    assert where == os.path.join(site, "presets")  # the installed copy, not the checkout's
    assert presets.split() == sorted(p.stem for p in (REPO / "presets" / "knobs").glob("*.toml"))
    assert knobs == "{'budget': 8, 'topk': 4, 'window': 2048}"
    assert int(problems) >= 20


def test_the_editable_install_reads_the_checkout_s_presets():
    assert presets_dir() == REPO / "presets"


def test_a_checkout_without_an_install_reports_an_unknown_version():
    # -S: no site-packages, so neither the editable install's path nor its metadata; only the checkout
    code = "import sys; sys.path.insert(0, sys.argv[1]); from backends.core.version import ddtune_version; " \
           "print(ddtune_version())"
    out = subprocess.run([sys.executable, "-S", "-P", "-c", code, str(REPO)], capture_output=True, text=True,
                         timeout=60, env=clean_env(), cwd="/")
    assert (out.returncode, out.stdout.strip()) == (0, UNKNOWN), out.stderr


def test_another_presets_package_is_named_with_the_fix_not_a_traceback(tmp_path):
    # the wheel's names are generic: in a shared environment another distribution's 'presets' can
    # come first on sys.path
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "__init__.py").write_text("")
    ddtune = Path(sys.executable).with_name("ddtune")
    out = subprocess.run([str(ddtune), "status"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env=clean_env(PYTHONPATH=str(tmp_path)))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"ddtune: error: the 'presets' package found at {tmp_path / 'presets'} is not ddtune's" in out.stderr
    assert "hint: another installed package named 'presets' hides ddtune's" in out.stderr
    assert "pipx install ." in out.stderr

"""The layer rule of design.md: backends and workloads never load the UI stack."""

import pkgutil
import subprocess
import sys

import pytest

from tests.helpers import REPO, ddtune_env

UI_MODULES = ("textual", "rich", "plotext", "textual_plotext", "tui")


def all_modules(package: str) -> list[str]:
    pkg_path = REPO / package
    names = [package]
    for info in pkgutil.walk_packages([str(pkg_path)], prefix=f"{package}."):
        names.append(info.name)
    return names


@pytest.mark.parametrize("package", ["backends", "workloads"])
def test_package_imports_no_ui(package):
    modules = all_modules(package)
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {UI_MODULES!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=ddtune_env(), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"{package} pulled in UI modules: {out.stdout.strip()}"


def test_headless_help_loads_no_textual():
    code = (
        "import sys\n"
        "from tui import cli\n"
        "cli.build_parser()\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'plotext'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=ddtune_env(), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""

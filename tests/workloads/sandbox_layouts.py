"""ddtune installed for real in each way the README and users install it, under /usr/local/src (inside
/usr, which the sandbox once showed whole), for the tests that grade a lookup answer from each.

Built once per test run and shared by the pytest-xdist workers (a lock in the run's shared temp
folder; the last worker done removes it): a git clone of this checkout's shipped files (with a real
.git of loose objects), its wheel built by hatchling, and this interpreter's pip installing
``--no-deps`` (grading needs no dependency) into interpreters without pip of their own:

- ``editable``: ``pip install -e`` of the clone into a venv (the README's developer install);
- ``pipx``: the clone's wheel in a venv of its own, the clone left where it is: ``pipx install .`` or
  ``uv tool install .`` from a clone under /usr/local/src, as the README advises (the same as
  ``pip install`` of the built wheel into any venv);
- ``interpreter-site``: the wheel in the site-packages of an interpreter itself (a hard-linked copy of
  this one's binary and stdlib), which pyenv, a python built from source and Docker's python images
  keep inside the stdlib folder the sandbox shows;
- ``pythonpath``: the clone on PYTHONPATH of the bare interpreter (no install at all).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.helpers import REPO

SRC = Path("/usr/local/src")
PREFIX = "ddtune-layouts-"
SHIPPED = ("README.md", "pyproject.toml", "backends", "presets", "tui", "workloads")
GIT = ["git", "-c", "user.name=ddtune-tests", "-c", "user.email=tests@ddtune.invalid", "-c", "init.defaultBranch=main",
       "-c", "gc.auto=0"]
STALE_S = 3600.0
UNNEEDED = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"}


@dataclass(frozen=True)
class Layout:
    name: str
    python: str  # the grader's interpreter
    pythonpath: str | None
    presets: str  # where that grader must find ddtune's presets: proof it runs from this layout


@dataclass(frozen=True)
class Layouts:
    root: Path
    clone: Path
    targets: tuple[str, ...]  # where a lookup answer searches: the clone and every site-packages made
    each: tuple[Layout, ...]
    build_s: float  # what building them cost (wall clock), for the report

    def get(self, name: str) -> Layout:
        return next(layout for layout in self.each if layout.name == name)


def _run(argv: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(argv[:6])}...: {done.stderr[-2000:]}"
    return done.stdout


def _install(python: Path, *what: str) -> None:
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
          "--break-system-packages", *what])


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another filesystem
        shutil.copy2(source, target)


def _interpreter_copy(root: Path) -> Path:
    """This interpreter's installation (its binary and stdlib, hard-linked) at ``root``/python, with a
    site-packages of its own: where ``pip install`` puts ddtune for that interpreter (inside the
    stdlib folder for pyenv, a python built from source or a Docker image's /usr/local)."""
    exe = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    prefix = os.path.realpath(sys.base_prefix)
    copy = root / "python"
    stdlib = json.loads(_run([exe, "-I", "-S", "-c", "import json, sys; print(json.dumps(sys.path))"]))
    for folder in [p for p in stdlib if os.path.isdir(p)]:
        rel = os.path.relpath(os.path.realpath(folder), prefix)
        if not (copy / rel).exists():
            shutil.copytree(folder, copy / rel, symlinks=True, copy_function=_link_or_copy,
                            ignore=lambda d, names, top=folder: [n for n in names if d == top and n in UNNEEDED])
    (copy / os.path.relpath(exe, prefix)).parent.mkdir(parents=True, exist_ok=True)
    _link_or_copy(exe, str(copy / os.path.relpath(exe, prefix)))
    return copy / os.path.relpath(exe, prefix)


def _site_packages(python: Path) -> str:
    return _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()


def _wheel(project: Path, out: Path) -> str:
    from hatchling.builders.wheel import WheelBuilder

    return list(WheelBuilder(str(project)).build(directory=str(out), versions=["standard"]))[0]


def _pythons(root: Path) -> tuple[Path, Path, Path]:
    """The editable venv's, the pipx venv's and the interpreter copy's python."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return (root / "venv-editable" / "bin" / "python", root / "pipx" / "venvs" / "ddtune" / "bin" / "python",
            root / "python" / os.path.relpath(base, os.path.realpath(sys.base_prefix)))


def _layouts(root: Path, build_s: float) -> Layouts:
    """The layouts built under ``root``."""
    clone = root / "ddtune"
    editable, pipx, own = _pythons(root)
    sites = [_site_packages(python) for python in (editable, pipx, own)]
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    each = (Layout("editable", str(editable), None, str(clone / "presets")),
            Layout("pipx", str(pipx), None, os.path.join(sites[1], "presets")),
            Layout("interpreter-site", str(own), None, os.path.join(sites[2], "presets")),
            Layout("pythonpath", base, str(clone), str(clone / "presets")))
    return Layouts(root, clone, (str(clone), *sites), each, build_s)


def build(root: Path) -> Layouts:
    """Every layout under ``root``, readable by anyone as a real install is (umask 022, whatever the
    worker's: a grader's child runs as another uid and must be able to find what it may see)."""
    umask = os.umask(0o022)
    try:
        return _build(root)
    finally:
        os.umask(umask)


def _build(root: Path) -> Layouts:
    start = time.monotonic()
    clone = root / "ddtune"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *SHIPPED],
                            cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, clone / name)
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "ddtune"]):
        _run([*GIT, *step], cwd=clone)
    editable, pipx, _ = _pythons(root)
    for python in (editable, pipx):
        _run([sys.executable, "-m", "venv", "--without-pip", str(python.parent.parent)])
    _install(editable, "-e", str(clone))
    wheel = _wheel(clone, root / "dist")
    _install(pipx, "--no-index", wheel)
    _install(_interpreter_copy(root), "--no-index", wheel)
    return _layouts(root, time.monotonic() - start)


def _users(root: Path) -> list[int]:
    try:
        return [int(p.name) for p in (root / "users").iterdir() if p.name.isdigit()]
    except OSError:
        return []


def _sweep() -> None:
    """Layouts left by a test run that was killed: no live user, older than an hour."""
    for path in SRC.glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError):
            if not any(psutil.pid_exists(pid) for pid in _users(path)) and time.time() - path.stat().st_mtime > STALE_S:
                shutil.rmtree(path)


@contextlib.contextmanager
def shared(run_dir: Path) -> Iterator[Layouts]:
    """The layouts of this test run: built by the first worker that asks, under a lock in ``run_dir``
    (shared by the run's workers), removed when the last worker using them is done."""
    record = run_dir / "ddtune-layouts.json"
    with open(run_dir / "ddtune-layouts.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            found = json.loads(record.read_text()) if record.exists() else None
            if found is None or not Path(found["root"], "ready").exists():
                _sweep()
                root = SRC / f"{PREFIX}{uuid.uuid4().hex[:12]}"
                umask = os.umask(0o022)  # the root and its users/ too, readable by anyone
                try:
                    (root / "users").mkdir(parents=True)
                finally:
                    os.umask(umask)
                (root / "users" / str(os.getpid())).touch()
                try:
                    layouts = build(root)
                except BaseException:
                    shutil.rmtree(root, ignore_errors=True)
                    raise
                (root / "ready").touch()
                record.write_text(json.dumps({"root": str(root), "build_s": layouts.build_s}))
            else:
                root = Path(found["root"])
                (root / "users" / str(os.getpid())).touch()
                layouts = _layouts(root, found["build_s"])
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    try:
        yield layouts
    finally:
        with open(run_dir / "ddtune-layouts.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                (root / "users" / str(os.getpid())).unlink(missing_ok=True)
                if not _users(root):
                    shutil.rmtree(root, ignore_errors=True)
                    record.unlink(missing_ok=True)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

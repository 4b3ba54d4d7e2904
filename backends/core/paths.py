"""Where ddtune keeps its state and finds its config and shipped data."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from backends.core.errors import ConfigError
from backends.core.statefs import trusted_dir

PRESETS_PACKAGE = "presets"  # the data package ddtune ships (presets/__init__.py says what it holds)
# ddtune's import packages: what the wheel installs (pyproject.toml; tests/unit/test_packaging.py pins both)
PACKAGES = ("tui", "workloads", "backends", PRESETS_PACKAGE)
ISOLATED = ("install ddtune in an environment of its own: 'pipx install .' or 'uv tool install .' in its "
             "checkout (README)")


@functools.cache
def presets_dir() -> Path:
    """The folder of the shipped data (flavours.toml, knobs/*.toml, problems/coding.toml).

    Found by ``importlib.resources`` the way the code itself is imported (a checkout on sys.path, an
    editable install, the wheel in site-packages), never relative to a source file. A folder on
    disk, which every way ddtune is installed gives: readers name its files in their errors, and the
    grading sandbox covers it. The check for flavours.toml catches another distribution's top-level
    ``presets`` package shadowing ddtune's (the wheel installs generic names)."""
    from importlib.resources import files  # on first use (the help lists the shipped knobs: nearly every run)

    try:
        found = files(PRESETS_PACKAGE)
    except ModuleNotFoundError:
        raise ConfigError("ddtune's shipped data (the 'presets' package) is not importable",
                          hint=f"reinstall ddtune: {ISOLATED}") from None
    if not isinstance(found, Path):  # a zip or a namespace spread over folders: no installer makes either
        raise ConfigError(f"ddtune's shipped data (the 'presets' package) is not one folder on disk: {found}",
                          hint=f"reinstall ddtune: {ISOLATED}")
    if not (found / "flavours.toml").is_file():
        from backends.core.install import foreign_packages

        owner = next((s.distribution for s in foreign_packages((PRESETS_PACKAGE,)) if s.hides and s.distribution),
                     None)
        by = f" (the distribution {owner})" if owner else ""
        raise ConfigError(f"the 'presets' package found at {found} is not ddtune's (it has no flavours.toml)",
                          hint=f"another installed package named 'presets' hides ddtune's{by}; {ISOLATED}")
    return found


def package_dirs() -> list[Path]:
    """The folders ddtune's packages are imported from, code and presets, wherever that is (a venv,
    site-packages, a checkout). ``find_spec`` asks the import system without importing anything."""
    from importlib.util import find_spec

    found: list[Path] = []
    for name in PACKAGES:
        spec = find_spec(name)
        found += [Path(d) for d in (spec.submodule_search_locations or [])] if spec is not None else []
    return found


def problems_file() -> Path:
    """The built-in coding problems: prompts, tests and the reference solutions the simulator answers
    from (graded code must never see this file: workloads/grading/sandbox_isolation.py hides it)."""
    return presets_dir() / "problems" / "coding.toml"


_USER_UMASK: int | None = None  # the umask ddtune started with, for the servers it launches


def private_umask() -> None:
    """From here on this process creates files 0600 and dirs 0700 (the composition root calls it:
    the state dir holds server logs with SGLang's server_args dump, API key included)."""
    global _USER_UMASK
    if _USER_UMASK is None:
        _USER_UMASK = os.umask(0o077)


def user_umask() -> int:
    """The umask to give a launched server: the user's own, not ddtune's private one (-1: inherit)."""
    return -1 if _USER_UMASK is None else _USER_UMASK


def state_dir(create: bool = True) -> Path:
    """``$DDTUNE_STATE_DIR``, else ``$XDG_STATE_HOME/ddtune``, else ``~/.local/state/ddtune``.

    Created 0700 (``create=False``: not made when missing, for a reader that only looks); an existing
    one must be a directory of the effective user's that nobody else may write
    (backends.core.statefs.trusted_dir, checked on every call: it is one lstat)."""
    explicit = os.environ.get("DDTUNE_STATE_DIR")
    if explicit:
        path = Path(explicit).expanduser()
    else:
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(base) / "ddtune"
    return trusted_dir(path, create=create)


# The folder of "the server we manage" here: the state dir itself, or a parallel sweep's lane folder
# (backends.record.lanes) inside the lane's task. A context variable, so lanes running side by side in one
# event loop (and the threads they hand work to) each see their own server.json, lock and logs.
_SERVER_DIR: ContextVar[Path | None] = ContextVar("ddtune_server_dir", default=None)


def server_dir() -> Path:
    """Where the managed server's record lives (server.json, launch.json, lifecycle.lock, logs/):
    ``state_dir()``, or the lane folder set by ``use_server_dir`` in this task."""
    return _SERVER_DIR.get() or state_dir()


@contextmanager
def use_server_dir(path: Path) -> Iterator[Path]:
    """Within the block (and the tasks and threads it starts), manage the server recorded in ``path``."""
    trusted_dir(path)
    token = _SERVER_DIR.set(path)
    try:
        yield path
    finally:
        _SERVER_DIR.reset(token)


def logs_dir() -> Path:
    """Where the managed server's logs go: one file per launch, beside its record."""
    return trusted_dir(server_dir() / "logs")


def runs_dir() -> Path:
    return trusted_dir(state_dir() / "runs")


def config_candidates() -> list[Path]:
    """The config files ddtune looks for when ``--config`` is not given, in order."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path.cwd() / "ddtune.toml", Path(base) / "ddtune" / "ddtune.toml"]


def find_config(explicit: str | os.PathLike[str] | None) -> Path | None:
    """The config file to use, or None when there is none (ddtune then runs the simulator)."""
    if explicit:
        return Path(explicit).expanduser()
    for candidate in config_candidates():
        if candidate.is_file():
            return candidate
    return None

"""Where ddtune keeps its state and finds its config and shipped data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from backends.core.statefs import trusted_dir

ROOT = Path(__file__).resolve().parents[2]
PRESETS_DIR = ROOT / "presets"
PROBLEMS_FILE = PRESETS_DIR / "problems" / "coding.toml"


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


def state_dir() -> Path:
    """``$DDTUNE_STATE_DIR``, else ``$XDG_STATE_HOME/ddtune``, else ``~/.local/state/ddtune``.

    Created 0700; an existing one must be a directory of the effective user's that nobody else may
    write (backends.core.statefs.trusted_dir, checked on every call: it is one lstat)."""
    explicit = os.environ.get("DDTUNE_STATE_DIR")
    if explicit:
        path = Path(explicit).expanduser()
    else:
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(base) / "ddtune"
    return trusted_dir(path)


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

"""Where ddtune keeps its state and finds its config and shipped data."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS_DIR = ROOT / "presets"
PROBLEMS_FILE = PRESETS_DIR / "problems" / "coding.toml"


def state_dir() -> Path:
    """``$DDTUNE_STATE_DIR``, else ``$XDG_STATE_HOME/ddtune``, else ``~/.local/state/ddtune``."""
    explicit = os.environ.get("DDTUNE_STATE_DIR")
    if explicit:
        path = Path(explicit).expanduser()
    else:
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(base) / "ddtune"
    path.mkdir(parents=True, exist_ok=True)
    return path


def runs_dir() -> Path:
    path = state_dir() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


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

"""server.json: what ddtune started, so a later ddtune (after SIGHUP, a dropped SSH session, a
closed console) can re-attach, after checking the pid is still that very server."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from backends.paths import state_dir
from backends.process import is_running

STATE_FILE = "server.json"


@dataclass(frozen=True)
class ServerState:
    backend: str
    pid: int | None
    pgid: int | None
    host: str
    port: int
    url: str
    config_hash: str
    knobs: dict[str, Any]
    log_path: str | None
    started_at: float
    create_time: float | None = None
    argv: tuple[str, ...] = ()
    phase: str = "starting"
    reason: str | None = None
    effective: dict[str, Any] = field(default_factory=dict)
    mismatches: tuple[str, ...] = ()
    ready_at: float | None = None
    config_source: str | None = None
    unit: str | None = None

    def with_(self, **changes: Any) -> "ServerState":
        return replace(self, **changes)

    def is_alive(self) -> bool:
        """The recorded pid runs and is the same process (same start time), not a reused pid."""
        return is_running(self.pid, self.create_time)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["argv"] = list(self.argv)
        data["mismatches"] = list(self.mismatches)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ServerState":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["argv"] = tuple(kw.get("argv", ()))
        kw["mismatches"] = tuple(kw.get("mismatches", ()))
        return cls(**kw)


def state_path() -> Path:
    return state_dir() / STATE_FILE


def save_state(state: ServerState) -> Path:
    """Write server.json atomically (temp file + rename): a reader never sees half a file."""
    path = state_path()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".server.", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(state.to_json(), fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def load_state() -> ServerState | None:
    path = state_path()
    try:
        return ServerState.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        return None  # unreadable: treated as no state; the next start rewrites it


def clear_state() -> None:
    try:
        state_path().unlink()
    except FileNotFoundError:
        pass


def logs_dir() -> Path:
    path = state_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path

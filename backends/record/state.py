"""server.json: what ddtune started, so a later ddtune (after SIGHUP, a dropped SSH session, a
closed console) can re-attach, after checking the pid is still that very server.

Two files, both 0600 in the 0700 state dir: ``server.json`` (redacted: what status, the console and
run records show) and ``launch.json`` (the real argv, API key included, and the launch token that
proves the server is ours: backends.launch.ownership). ``launch.json`` is written before the server is
spawned (an intent: token, argv, log, no pid yet) and again once its pid is known, so a ddtune
killed at any instant leaves a record of the launch that a later one finds the server by
(backends.drivers.launchrec). A file that does not decode to a well-typed record is reported as corrupt,
moved aside, and treated as no record: it never reaches a signal. Every file is read and written
through backends.core.statefs (no symlinks followed, atomic replace, one line when the disk is full).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from backends.core.apikey import argv_api_key, redact_argv
from backends.core.datafile import loads
from backends.launch.ownership import SAME_START_S, carries_token
from backends.core.paths import server_dir
from backends.launch.process import is_running
from backends.core.statefs import read_state_file, trusted_dir, write_atomic
from backends.knobs.verify import KnobCheck, mismatch_sentences

STATE_FILE = "server.json"
LAUNCH_FILE = "launch.json"


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
    checks: tuple[KnobCheck, ...] = ()
    ready_at: float | None = None
    config_source: str | None = None
    unit: str | None = None
    token: str | None = None  # the launch token (launch.json only: never in server.json)

    def with_(self, **changes: Any) -> ServerState:
        return replace(self, **changes)

    @property
    def mismatches(self) -> tuple[str, ...]:
        """One sentence per knob the server runs differently from what we asked for."""
        return mismatch_sentences(self.checks)

    def is_alive(self) -> bool:
        """The recorded pid runs and is the same process (same start time), not a reused pid, and
        (a process ddtune launched) carries this record's launch token. A record without a create
        time proves nothing: not alive, as far as ddtune is concerned. A systemd unit's main pid was
        started by systemd: no token to carry."""
        if self.create_time is None or not is_running(self.pid, self.create_time):
            return False
        return self.backend == "systemd" or (self.pid is not None and carries_token(self.pid, self.token))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["token"]
        data["argv"] = list(redact_argv(self.argv))
        data["checks"] = [c.to_json() for c in self.checks]
        data["mismatches"] = list(self.mismatches)  # for readers (and older ddtunes) that only print them
        return data

    @classmethod
    def from_json(cls, data: Any) -> ServerState:
        """Decode a record, checking every field's type; ValueError names the first bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        for name, kinds, required in _SCHEMA:
            if name not in data:
                if required:
                    raise ValueError(f"field '{name}' is missing")
                continue
            value = data[name]
            if not _is(value, kinds):
                raise ValueError(f"field '{name}': expected {_names(kinds)}, got {value!r:.40}")
        known = {f.name for f in fields(cls)} - {"token"}  # a token in server.json is no proof: ignored
        kw = {k: v for k, v in data.items() if k in known}
        kw["argv"] = tuple(kw.get("argv", ()))
        if "checks" in data:
            kw["checks"] = tuple(_check(i, c) for i, c in enumerate(data["checks"]))
        else:  # written before checks were typed: its mismatch sentences stay mismatches
            kw["checks"] = tuple(KnobCheck.legacy(m) for m in data.get("mismatches", ()))
        return cls(**kw)


def _check(index: int, doc: Any) -> KnobCheck:
    try:
        return KnobCheck.from_json(doc)
    except ValueError as exc:
        raise ValueError(f"field 'checks'[{index}]: {exc}") from None


_NUM = "number"
_PID = "pid"
_SCHEMA: tuple[tuple[str, tuple[Any, ...], bool], ...] = (
    ("backend", (str,), True), ("pid", (_PID, None), True), ("pgid", (_PID, None), True),
    ("host", (str,), True), ("port", (int,), True), ("url", (str,), True), ("config_hash", (str,), True),
    ("knobs", (dict,), True), ("log_path", (str, None), True), ("started_at", (_NUM,), True),
    ("create_time", (_NUM, None), False), ("argv", ("strings",), False), ("phase", (str,), False),
    ("reason", (str, None), False), ("effective", (dict,), False), ("mismatches", ("strings",), False),
    ("checks", (list,), False),
    ("ready_at", (_NUM, None), False), ("config_source", (str, None), False), ("unit", (str, None), False),
)


def _is(value: Any, kinds: tuple[Any, ...]) -> bool:
    for kind in kinds:
        if kind is None and value is None:
            return True
        if kind == _NUM and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return True
        if kind == _PID and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return True
        if kind == "strings" and isinstance(value, list) and all(isinstance(x, str) for x in value):
            return True
        if isinstance(kind, type) and isinstance(value, kind) and not isinstance(value, bool):
            return True
    return False


def _names(kinds: tuple[Any, ...]) -> str:
    words = {str: "a string", int: "an integer", dict: "an object", list: "a list", None: "null",
             _NUM: "a number", "strings": "a list of strings", _PID: "a positive integer"}
    return " or ".join(words[k] for k in kinds)


def state_path() -> Path:
    return server_dir() / STATE_FILE


def _write_private(path: Path, doc: dict[str, Any]) -> None:
    """Atomically (temp file + rename, so a reader never sees half a file), mode 0600, never through
    a symlink (backends.core.statefs)."""
    write_atomic(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def save_launch(state: ServerState) -> Path:
    """Write launch.json for ``state``: before the spawn (pid None: the intent) and after it."""
    path = server_dir() / LAUNCH_FILE
    _write_private(path, {"pid": state.pid, "create_time": state.create_time, "argv": list(state.argv),
                          "token": state.token, "record": state.to_json()})
    return path


def save_state(state: ServerState) -> Path:
    """Write server.json (argv redacted) and, for a launched process, the 0600 launch record."""
    path = state_path()
    if state.token or (state.pid and state.argv):
        save_launch(state)
    _write_private(path, state.to_json())
    return path


def read_launch() -> dict[str, Any] | None:
    """launch.json as written by save_launch, or None (missing or not such a record)."""
    try:
        raw = read_state_file(server_dir() / LAUNCH_FILE)
        doc = loads(raw.decode("utf-8")) if raw is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("argv"), list):
        return None
    if not all(isinstance(a, str) for a in doc["argv"]):
        return None
    return doc


def _same_launch(doc: dict[str, Any], state: ServerState) -> bool:
    if doc.get("pid") != state.pid:
        return False
    recorded, wanted = doc.get("create_time"), state.create_time
    return wanted is None or (isinstance(recorded, (int, float)) and abs(recorded - wanted) < SAME_START_S)


def load_state(note: Callable[[str], None] | None = None) -> ServerState | None:
    """The recorded server (with its launch token, from launch.json), or None. A corrupt file is
    moved aside (and ``note`` told): a hand-edited or half-migrated record must never stop ddtune,
    nor be acted on. A symlink or a file not ours raises UntrustedState."""
    path = state_path()
    try:
        raw = read_state_file(path)
    except OSError as exc:
        (note or _stderr)(f"cannot read {path}: {exc.strerror}; ignoring it")
        return None
    if raw is None:
        return None
    try:
        state = ServerState.from_json(loads(raw.decode("utf-8")))  # bounded depth: never a RecursionError
    except (ValueError, TypeError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        (note or _stderr)(f"{path} is corrupt ({_short(exc)}); {quarantine_state('corrupt')} and went on "
                          "without it: nothing it names was signalled")
        return None
    doc = read_launch() if state.pid else None
    if doc is not None and isinstance(doc.get("token"), str) and _same_launch(doc, state):
        state = state.with_(token=doc["token"])
    return state


def quarantine_state(why: str) -> str:
    """Move server.json aside (kept for a human to read, never acted on again); says where."""
    path = state_path()
    aside = path.with_name(f"{STATE_FILE}.{why}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return "there was no record to set aside"
    except OSError as exc:
        return f"could not move {path} aside ({exc.strerror})"
    try:
        (path.parent / LAUNCH_FILE).unlink()
    except FileNotFoundError:
        pass
    return f"moved the record to {aside}"


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]


def _stderr(text: str) -> None:
    import sys

    sys.stderr.write(f"ddtune: warning: {text}\n")


def launched_api_key(state: ServerState | None) -> str | None:
    """The --api-key ddtune launched the server of ``state`` with (from the 0600 launch record)."""
    if state is None or not state.pid:
        return None
    doc = read_launch()
    if doc is None or not _same_launch(doc, state):
        return None
    return argv_api_key(doc["argv"])


def clear_state() -> None:
    for name in (STATE_FILE, LAUNCH_FILE):
        try:
            (server_dir() / name).unlink()
        except FileNotFoundError:
            pass


def clear_launch() -> None:
    try:
        (server_dir() / LAUNCH_FILE).unlink()
    except FileNotFoundError:
        pass


def logs_dir() -> Path:
    return trusted_dir(server_dir() / "logs")

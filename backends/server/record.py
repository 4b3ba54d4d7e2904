"""server.json and launch.json on disk: the one module that reads and writes them.

Only the server family imports it (an import-linter ``protected`` contract in pyproject.toml):
the session that owns the server writes the record, and everyone else reads it through the
server's face (``backends.server``), as a typed ``ServerState``, never as a file.

Two files, both 0600 in the 0700 state dir: ``server.json`` (redacted: what status, the console and
run records show) and ``launch.json`` (the real argv, API key included, and the launch token that
proves the server is ours: backends.launch.ownership). ``launch.json`` is written before the server is
spawned (an intent: token, argv, log, no pid yet) and again once its pid is known, so a ddtune
killed at any instant leaves a record of the launch that a later one finds the server by
(backends.server.launchrec). A file that does not decode to a well-typed record is reported as
corrupt, moved aside, and treated as no record: it never reaches a signal. Every file is read and
written through backends.core.statefs (no symlinks followed, atomic replace, one line when the disk
is full).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backends.core.datafile import loads
from backends.core.paths import server_dir
from backends.core.statefs import probe_room, read_state_file, write_atomic
from backends.launch.ownership import SAME_START_S
from backends.record.state import ServerState

STATE_FILE = "server.json"
LAUNCH_FILE = "launch.json"


def state_path() -> Path:
    return server_dir() / STATE_FILE


def _encode(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _launch_doc(state: ServerState) -> bytes:
    return _encode({"pid": state.pid, "create_time": state.create_time, "argv": list(state.argv),
                    "token": state.token, "record": state.to_json()})


def save_launch(state: ServerState) -> Path:
    """Write launch.json for ``state``: before the spawn (pid None: the intent) and after it."""
    path = server_dir() / LAUNCH_FILE
    write_atomic(path, _launch_doc(state))
    return path


PROBE_FILE = "launch.json.probe"
READY_EXTRA = 8192  # bytes a ready record adds to the launch's (checks, effective, reason) and its startups line


def prove_room(state: ServerState) -> None:
    """Write and remove a state file as large as the records of launching ``state`` (launch.json and
    server.json, with room for what the ready record adds), through the writer of the records
    themselves. StateWriteError: the dir is read-only or full, so no launch could be recorded now."""
    probe_room(server_dir() / PROBE_FILE, _launch_doc(state) + _encode(state.to_json()) + b" " * READY_EXTRA)


def save_state(state: ServerState) -> Path:
    """Write server.json (argv redacted) and, for a launched process, the 0600 launch record."""
    path = state_path()
    if state.token or (state.pid and state.argv):
        save_launch(state)
    write_atomic(path, _encode(state.to_json()))
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


def _read(note: Callable[[str], None] | None) -> bytes | None:
    path = state_path()
    try:
        return read_state_file(path)
    except OSError as exc:
        (note or _stderr)(f"cannot read {path}: {exc.strerror}; ignoring it")
        return None


def _decode(raw: bytes, note: Callable[[str], None] | None) -> ServerState | None:
    """The record in ``raw`` with what its launch.json adds; None (the file set aside) when corrupt."""
    try:
        state = ServerState.from_json(loads(raw.decode("utf-8")))  # bounded depth: never a RecursionError
    except (ValueError, TypeError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        (note or _stderr)(f"{state_path()} is corrupt ({_short(exc)}); {quarantine_state('corrupt')} and went "
                          "on without it: nothing it names was signalled")
        return None
    doc = read_launch() if state.pid else None
    if doc is not None and _same_launch(doc, state):  # the argv as launched (its API key) and the token
        token = doc.get("token")
        state = state.with_(argv=tuple(doc["argv"]), token=token if isinstance(token, str) else None)
    return state


def load_state(note: Callable[[str], None] | None = None) -> ServerState | None:
    """The recorded server, or None; with its launch token and its argv as launched (API key and all)
    from launch.json when that names the same launch. A corrupt file is moved aside (and ``note``
    told): a hand-edited or half-migrated record must never stop ddtune, nor be acted on. A symlink
    or a file not ours raises UntrustedState."""
    raw = _read(note)
    return _decode(raw, note) if raw is not None else None


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
    clear_launch()
    return f"moved the record to {aside}"


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]


def _stderr(text: str) -> None:
    import sys

    sys.stderr.write(f"ddtune: warning: {text}\n")


def clear_state() -> None:
    try:
        state_path().unlink()
    except FileNotFoundError:
        pass
    clear_launch()


def clear_launch() -> None:
    try:
        (server_dir() / LAUNCH_FILE).unlink()
    except FileNotFoundError:
        pass


Identity = tuple[int, int, int, int]  # (device, inode, size, mtime ns) of a server.json


def _identity() -> Identity | None:
    """Which file server.json is now, without reading it: every writer replaces it by a rename (a new
    inode), so the file this session wrote is known by its identity alone. None: no file."""
    try:
        st = os.lstat(state_path())
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class RecordFile:
    """A session's pen on its record: every write and removal of server.json by the session goes
    through it, and it remembers which file it left there (None: none). The session's watcher asks
    ``changed()`` when the kernel says the file changed: only a file other than the one the session
    left (or last read) is another process's doing, and only that one is read."""

    def __init__(self) -> None:
        self._known = False
        self._left: Identity | None = None

    def _remember(self, identity: Identity | None) -> None:
        self._known, self._left = True, identity

    def load(self, note: Callable[[str], None] | None = None) -> ServerState | None:
        raw = _read(note)
        if raw is None:
            return None
        state = _decode(raw, note)
        if state is None:
            self._remember(None)  # this session set the corrupt file aside
        return state

    def save(self, state: ServerState) -> None:
        save_state(state)
        self._remember(_identity())  # no await between: the watcher, on this loop, looks only after

    def clear(self) -> None:
        clear_state()
        self._remember(None)

    def quarantine(self, why: str) -> str:
        said = quarantine_state(why)
        self._remember(None)
        return said

    def changed(self, note: Callable[[str], None] | None = None) -> tuple[bool, ServerState | None]:
        """(True, the record now) when server.json is not the file this session left there or last
        read; (False, None), reading nothing, when it is."""
        identity = _identity()
        if self._known and identity == self._left:
            return False, None
        raw = _read(note) if identity is not None else None
        state = _decode(raw, note) if raw is not None else None
        self._remember(identity if state is not None else None)  # a corrupt one was set aside just now
        return True, state

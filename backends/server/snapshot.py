"""The recorded server as a typed snapshot, for readers that run no session of their own (``status``,
``doctor``, the workload commands' URL, key and log lookups, run provenance): the owner's record,
read through its one codec, never as a file.

    state = current_server()          # phase STALE when its pid is gone or is another process now
    state = recorded_server()         # as recorded (its url, log, argv as launched), no /proc check
"""

from __future__ import annotations

from collections.abc import Callable

from backends.core.apikey import launched_key
from backends.core.phase import Phase
from backends.drivers.registry import alive, driver_flags
from backends.record.state import ServerState
from backends.server.record import load_state, save_state

Note = Callable[[str], None]


def recorded_server(note: Note | None = None) -> ServerState | None:
    """The server ddtune recorded for this state dir (or lane), or None. A corrupt record is set
    aside and ``note`` told (default: a warning on stderr)."""
    return load_state(note)


def current_server(note: Note | None = None) -> ServerState | None:
    """The recorded server as it stands now: phase ``stale`` when a ready or starting server's pid
    is gone or no longer the process ddtune started (an attach has no pid to check)."""
    return as_it_stands(load_state(note))


def as_it_stands(state: ServerState | None) -> ServerState | None:
    if state is None or driver_flags(state.backend).attaches:
        return state
    if state.phase.live and not alive(state):
        return state.with_(phase=Phase.STALE, reason=f"pid {state.pid} is no longer the server ddtune started")
    return state


def is_alive(state: ServerState) -> bool:
    """Whether the server of ``state`` runs now, proved ours (see backends.drivers.registry.alive)."""
    return alive(state)


def launched_api_key(state: ServerState) -> str | None:
    """The ``--api-key`` ddtune launched the server of ``state`` with, when its record knows it."""
    return launched_key(state.argv)


def record_reason(state: ServerState, reason: str) -> bool:
    """Say in the record why the server of ``state`` stands as it does (a start nobody follows any
    more); False, and nothing written, when the record names another launch by now."""
    now = load_state()
    if now is None or (now.pid, now.started_at) != (state.pid, state.started_at):
        return False
    save_state(now.with_(reason=reason))
    return True

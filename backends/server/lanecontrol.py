"""Stop the servers a parallel sweep's lanes left: each through a ServerSession of its own, inside
its lane's folder, so its lock, ownership proof and record are the main server's code."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, assert_never

from backends.core.paths import use_server_dir
from backends.knobs.config import ServerConfig
from backends.server.lanes import lane_servers

if TYPE_CHECKING:
    from backends.server.events import SessionEvent


async def stop_lane_servers(config: ServerConfig, indexes: Collection[int] | None = None, *,
                            wait_for_lock: bool = True,
                            note: Callable[[str], None] | None = None) -> list[tuple[bool, str]]:
    """Stop the recorded server of each lane (all, or ``indexes``), each by a session of its own,
    under that lane's lock and ownership proof; (stopped, sentence) per lane that had a record. A
    record that proves nothing is set aside and reported (``ServerSession.stop``), never signalled:
    (False, why)."""
    from backends.core.errors import DdtuneError
    from backends.server.session import ServerSession

    said: list[tuple[bool, str]] = []
    for server in lane_servers(note):
        if indexes is not None and server.index not in indexes:
            continue
        with use_server_dir(server.folder):
            session = ServerSession(config, wait_for_lock=wait_for_lock, stream_log=False)
            if note is not None:
                session.subscribe(_notes_to(note))
            try:
                stopped = await session.stop()
            except DdtuneError as exc:
                said.append((False, f"lane {server.index}: {exc.message}"))
                continue
            finally:
                await session.close()
        if stopped is not None:
            said.append((True, f"lane {server.index}: {stopped.reason}"))
    return said


def _notes_to(note: Callable[[str], None]) -> Callable[[SessionEvent], None]:
    """A lane's stop session's events for ``note``: its sentences (what it stopped, set aside, waited
    for); the outcome is the stop's own return."""
    from backends.server.events import (
        AlarmCleared, AlarmRaised, CommandRefused, ConfigChanged, DecodeStats, FatalSeen, LogBatch, NoteAdded,
        PhaseChanged, PidChanged, Settled, Stopped, Verified,
    )

    def on_event(event: SessionEvent) -> None:
        match event:
            case NoteAdded(text=text):
                note(text)
            case (PhaseChanged() | LogBatch() | DecodeStats() | FatalSeen() | PidChanged() | ConfigChanged()
                  | Verified() | Settled() | Stopped() | CommandRefused() | AlarmRaised() | AlarmCleared()):
                pass  # a stop's refusal and result come back from stop() itself, said per lane
            case _:
                assert_never(event)

    return on_event

"""Stop the servers a parallel sweep's lanes left: each through a ServerSession of its own, inside
its lane's folder, so its lock, ownership proof and record are the main server's code."""

from __future__ import annotations

from collections.abc import Callable, Collection

from backends.core.paths import use_server_dir
from backends.knobs.config import ServerConfig
from backends.server.lanes import lane_servers


async def stop_lane_servers(config: ServerConfig, indexes: Collection[int] | None = None, *,
                            wait_for_lock: bool = True,
                            note: Callable[[str], None] | None = None) -> list[tuple[bool, str]]:
    """Stop the recorded server of each lane (all, or ``indexes``), each by a session of its own,
    under that lane's lock and ownership proof; (stopped, sentence) per lane that had a record. A
    record that proves nothing is set aside and reported (``ServerSession.stop``), never signalled:
    (False, why)."""
    from backends.core.errors import DdtuneError
    from backends.server.events import narrated
    from backends.server.session import ServerSession

    said: list[tuple[bool, str]] = []
    for server in lane_servers(note):
        if indexes is not None and server.index not in indexes:
            continue
        with use_server_dir(server.folder):
            session = ServerSession(config, wait_for_lock=wait_for_lock, stream_log=False)
            if note is not None:
                session.subscribe(narrated(None, note))  # its sentences: what it stopped, set aside
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


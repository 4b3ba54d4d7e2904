"""The headless server commands' use cases (``up``, ``restart``, ``down``): the config a command asks
for, and one session command run to its end, told as progress lines and notes.

A command hears a session through two callbacks, ``on_progress`` (where a start stands) and ``on_note``
(what ddtune did or decided); it never handles the session's events itself. An interrupted start
keeps starting (its model load is not thrown away): the outcome says what was left and how to get back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from backends.core.phase import Phase
from backends.core.errors import UsageError
from backends.knobs.config import ServerConfig
from backends.record.state import ServerState
from backends.server.events import narrated
from backends.server.startup import Progress

OnProgress = Callable[[Progress], None]
OnNote = Callable[[str], None]


def requested_config(config_path: str | None, preset: str | None = None, sets: Sequence[str] = (),
                     keep_running_knobs: bool = False, note: OnNote | None = None,
                     no_speculation: bool = False) -> ServerConfig:
    """The config file's (``config_path``, else ./ddtune.toml, else the XDG config dir, else the
    built-in simulator's): its knobs, then (restart only) the running server's knobs, then ``preset``,
    then each ``--set`` expression. ``up`` makes the server match the config file; ``restart --set
    k=v`` changes one knob of the server that runs now and keeps the others. ``no_speculation``: the
    same server without speculative decoding (``up --no-speculation``, the lossless baseline)."""
    from backends.knobs.config import load_config, load_preset, parse_set
    from backends.server.lifecycle import started_from
    from backends.server.snapshot import is_alive, recorded_server

    config = load_config(config_path)
    updates: dict[str, Any] = {}
    state = recorded_server(note) if keep_running_knobs else None
    if state and state.backend == config.backend and started_from(state, config) and is_alive(state):
        updates.update(state.knobs)
    if preset:
        updates.update(load_preset(preset, config.knob_table))
    for expr in sets:
        name, value = parse_set(expr, config.block_size, config.knob_table)
        updates[name] = value
    if updates:
        known = config.knob_table.known(config.knob_map)
        unknown = [k for k in updates if k not in known]
        if unknown:
            raise UsageError(
                f"--set {unknown[0]}: unknown knob",
                hint=f"known knobs: {', '.join(known)}; declare others with [knob.NAME] in the config (docs/knobs.md)",
            )
        config = config.with_knobs(updates)
    if no_speculation:
        from backends.knobs.baseline import baseline_config

        config = baseline_config(config)
    return config


@dataclass(frozen=True)
class ServerOutcome:
    """How a command ended: the record it left (None: no server was recorded), each lane server's
    ``(stopped, line)`` (``down``), and, when Ctrl-C cut a start short, what that left behind."""

    state: ServerState | None
    lanes: tuple[tuple[bool, str], ...] = field(default=())
    interrupted: str | None = None


def run_server_command(config, command: str, *, wait_for_lock: bool = True, on_progress: OnProgress | None = None,
                       on_note: OnNote | None = None, **options: Any) -> ServerOutcome:
    """Run ``command`` (``up``, ``restart``, ``stop``, or ``down``: stop, then the lanes' servers) on a
    session of ``config`` to its end; ``options`` go to the session's command."""
    from backends.server.lanecontrol import stop_lane_servers
    from backends.server.session import ServerSession

    async def main() -> ServerState | None:
        session = ServerSession(config, wait_for_lock=wait_for_lock, stream_log=False)
        session.subscribe(narrated(on_progress, on_note))
        try:
            return await getattr(session, "stop" if command == "down" else command)(**options)
        finally:
            await session.close()

    try:
        state = asyncio.run(main())
    except KeyboardInterrupt:
        if command in ("up", "restart"):
            return ServerOutcome(None, interrupted=left_after_interrupt(command, on_note))
        raise
    lanes: tuple[tuple[bool, str], ...] = ()
    if command == "down":
        lanes = tuple(asyncio.run(stop_lane_servers(config, wait_for_lock=wait_for_lock, note=on_note)))
    return ServerOutcome(state, lanes)


def left_after_interrupt(command: str, note: OnNote | None = None) -> str:
    """What a Ctrl-C during ``up``/``restart`` left behind, said truthfully, and how to get back. A
    server cut off mid-start keeps starting (its model load is not thrown away): its record says that
    nobody follows it, so ``status`` does not claim a start that is being watched."""
    from backends.server.snapshot import current_server, record_reason

    state = current_server(note)
    if state is None or state.phase == Phase.STOPPED:
        return "no server runs now (the old one was stopped, the new one not started); `ddtune up` starts it"
    if state.phase == Phase.STALE:
        return f"the server it started (pid {state.pid}) is gone; `ddtune up` starts a new one"
    if state.phase == Phase.STARTING:
        why = (f"not followed: the `ddtune {command}` that launched it was interrupted; `ddtune up` "
               f"re-attaches and waits until it is ready, `ddtune down` stops it")
        record_reason(state, why)
        return (f"the new server pid {state.pid} keeps starting (left running); `ddtune up` re-attaches "
                f"and waits until it is ready, `ddtune down` stops it")
    return f"the server pid {state.pid} is {state.phase}; `ddtune status` shows it, `ddtune down` stops it"

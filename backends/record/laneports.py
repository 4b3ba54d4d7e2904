"""Ports of a parallel sweep's lanes once they are planned (backends.record.lanes.assign_ports picks them):
the kernel's ephemeral range they should stay out of, whether a lane's start failed because its
port was taken, and the next free port to move the lane to.

A lane's port is checked free when the lanes are planned, but its server binds it only after
loading (SGLang binds last, after the weights and CUDA graphs). Anything may take it meanwhile: on
a base port inside the ephemeral range, the kernel hands it out as the local port of any client
connection, ddtune's own requests to the other lanes included.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from backends.logs.events import Fatal

EPHEMERAL_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
SAFE_BASE = 30000   # SGLang's default port, below Linux's default ephemeral range (32768-60999)
MOVE_SEARCH = 200   # how far past a taken port a lane looks for a free one

# the port a bind error names: uvicorn's ('0.0.0.0', 30000), or host:port
_NAMED_PORT = re.compile(r"\(\s*'[^']*'\s*,\s*(\d+)\s*\)|(?:\d+\.\d+\.\d+\.\d+|\]|localhost):(\d+)\b")


def ephemeral_range(path: Path = EPHEMERAL_FILE) -> tuple[int, int] | None:
    """The kernel's range of local ports for outgoing connections; None where it cannot be read."""
    try:
        low, high = (int(v) for v in path.read_text().split())
    except (OSError, ValueError):
        return None
    return (low, high) if 0 < low <= high else None


def ephemeral_note(ports: Collection[int], span: tuple[int, int] | None) -> str | None:
    """A note for the user when lane ports lie in the ephemeral range ``span`` (None: all is well)."""
    if span is None:
        return None
    low, high = span
    inside = sorted(p for p in ports if low <= p <= high)
    if not inside:
        return None
    example = SAFE_BASE if SAFE_BASE + len(ports) <= low else max(1024, low - 1000)
    return (f"lane port(s) {', '.join(map(str, inside))} lie in the kernel's ephemeral port range {low}-{high} "
            f"({EPHEMERAL_FILE}): a client connection may take one before its server binds it (the lane then "
            f"moves to another port and starts again); use a base port below {low}, e.g. port = {example} "
            f"in [server]")


def bind_clash(fatals: Iterable[Fatal], port: int) -> str | None:
    """The fatal log line saying the server could not bind ``port`` ("address already in use"),
    if one did. A line naming another port (an internal one of the server's) is not a clash on
    ``port``; one naming no port is taken as one."""
    for fatal in fatals:
        if fatal.kind != "port_in_use":
            continue
        named = {int(a or b) for a, b in _NAMED_PORT.findall(fatal.message)}
        if not named or port in named:
            return fatal.message.removeprefix("ERROR:").strip()
    return None


def can_bind(port: int) -> bool:
    """Whether a server could bind ``port`` now (as uvicorn does: SO_REUSEADDR, every address). A
    client connection's local port fails this, though nothing listens on it."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def next_free_port(after: int, avoid: Collection[int], owner_of: Callable[[int], object],
                   bindable: Callable[[int], bool] = can_bind) -> int | None:
    """The first port past ``after`` that no other lane uses (``avoid``), nobody listens on
    (``owner_of(port)`` is None) and a server could bind now; None within MOVE_SEARCH ports."""
    for port in range(after + 1, min(after + 1 + MOVE_SEARCH, 65536)):
        if port not in avoid and owner_of(port) is None and bindable(port):
            return port
    return None

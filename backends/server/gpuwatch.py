"""``ddtune gpu``'s use case: telemetry readings of the GPUs and the host, attributed to the managed
server (or a given pid) and to a parallel sweep's lane servers."""

from __future__ import annotations

import time
from collections.abc import Generator

from backends.core.errors import UsageError
from backends.server.telemetry import TelemetrySample

Readings = Generator[TelemetrySample, None, None]


def gpu_samples(pid: int | None = None, interval: float = 1.0, once: bool = False) -> Readings:
    """Readings every ``interval`` seconds (``once``: a single one, over a primed interval of at most
    0.5 s so CPU% means something) of the server ``pid``, else of the managed server in the state
    dir's record (and the lanes' servers). Raises UsageError for a bad interval or pid before reading."""
    from backends.server.lane_gpu import lane_trees
    from backends.server.telemetry import TelemetryStream

    if not interval > 0:
        raise UsageError(f"--interval must be a positive number of seconds, got {interval}", hint="e.g. --interval 1")
    if pid is not None and pid <= 0:
        raise UsageError(f"--pid must be a positive process id, got {pid}", hint="e.g. --pid 12345")
    ref = server_ref(pid)
    return _readings(TelemetryStream(server=lambda: ref, interval=interval, history=1, tree_every=5.0,
                                     lanes=None if pid is not None else lane_trees), interval, once)


def server_ref(pid: int | None) -> tuple[int, int | None] | None:
    """(pid, pgid) of the server to attribute memory to: ``pid``, else the managed server's record."""
    from backends.server.snapshot import recorded_server

    if pid is not None:
        return pid, None
    state = recorded_server()
    return (state.pid, state.pgid) if state is not None and state.pid is not None else None


def _readings(stream, interval: float, once: bool) -> Readings:
    try:
        if once:
            stream.sample_blocking()     # prime CPU% counters so the reading covers a real interval
            time.sleep(min(interval, 0.5))
            yield stream.sample_blocking()
            return
        while True:
            yield stream.sample_blocking()
            time.sleep(interval)
    finally:
        stream.close()

"""Where a managed server stands: one vocabulary for the record (server.json), a start's progress, the
console's panel and ``status --json``.

Each value is the string ddtune has always written, so records and JSON output read the same as before
(a ``StrEnum`` compares, hashes and serialises as its value). Two families of values share the type:

- a start's progress, in order: idle -> stopping-old -> waiting-for-port-and-gpu -> starting-process ->
  loading-weights -> capturing-graphs -> warmup -> ready | failed (backends/server/startup.py);
- the record's own: ``starting`` (launched, not yet ready), ``ready``, ``failed``, ``stopped`` (what a
  stop leaves), ``stale`` (its pid is gone or is another process now).
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    IDLE = "idle"
    STOPPING = "stopping-old"
    WAITING = "waiting-for-port-and-gpu"
    STARTING_PROCESS = "starting-process"
    LOADING = "loading-weights"
    CAPTURING = "capturing-graphs"
    WARMUP = "warmup"
    READY = "ready"
    FAILED = "failed"
    STARTING = "starting"   # the record: launched, not ready yet
    STOPPED = "stopped"     # the record: stopped (down, or a restart's old server)
    STALE = "stale"         # the record as it stands: its pid is gone or reused

    @property
    def settled(self) -> bool:
        """A start ended here: ready or failed."""
        return self in (Phase.READY, Phase.FAILED)

    @property
    def live(self) -> bool:
        """A record in this phase names a server that should be running (ready or still starting)."""
        return self in (Phase.READY, Phase.STARTING)


def phase_of(value: object, field: str = "phase") -> Phase:
    """``value`` (a record's JSON) as a Phase; ValueError names ``field`` and the phases there are."""
    if isinstance(value, str):
        try:
            return Phase(value)
        except ValueError:
            pass
    raise ValueError(f"field '{field}': expected one of {', '.join(p.value for p in Phase)}, got {value!r:.40}")

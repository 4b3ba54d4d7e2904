"""The one table of drivers: ``[server] backend`` name -> driver class, and what each can do.

Callers ask a driver's flags (``driver_flags(name)``: can it start, stop, does it stop by unit, attach to
someone else's server, spawn its own process, own GPU memory, simulate) and never its class or its
name: a new driver is one row here and one class, and no caller changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from backends.drivers.base import Driver
from backends.drivers.endpoint import EndpointDriver
from backends.drivers.llamacpp import LlamaCppDriver
from backends.drivers.spawn import SGLangDriver, SimDriver
from backends.drivers.systemd import SystemdDriver
from backends.knobs.config import ServerConfig
from backends.launch.ownership import carries_token
from backends.launch.process import is_running
from backends.record.state import ServerState

DRIVERS: Mapping[str, type[Driver]] = {
    "sglang": SGLangDriver, "sim": SimDriver, "systemd": SystemdDriver, "endpoint": EndpointDriver,
    "llamacpp": LlamaCppDriver,
}


@dataclass(frozen=True)
class DriverFlags:
    """What a driver can do, as plain facts (``Driver``'s class flags say what each one means)."""

    can_start: bool = False
    can_stop: bool = False
    has_logs: bool = False
    spawns: bool = False
    stops_by_unit: bool = False
    attaches: bool = False
    owns_gpu_memory: bool = False
    simulated: bool = False
    log_names_pid: bool = False

    @classmethod
    def of(cls, driver: type[Driver]) -> DriverFlags:
        return cls(**{f.name: bool(getattr(driver, f.name.upper())) for f in fields(cls)})


# A record naming no driver ddtune knows (written by hand): nothing it names is ddtune's to act on.
NO_DRIVER = DriverFlags()
FLAGS: Mapping[str, DriverFlags] = {name: DriverFlags.of(driver) for name, driver in DRIVERS.items()}


def driver_flags(name: str) -> DriverFlags:
    """The flags of the driver called ``name`` (NO_DRIVER for a name no driver has)."""
    return FLAGS.get(name, NO_DRIVER)


def make_driver(config: ServerConfig, **kw) -> Driver:
    """The driver the config names (``[server] backend``; the config loader checked the name)."""
    return DRIVERS[config.backend](config, **kw)


def driver_of(state: ServerState, current: Driver) -> Driver:
    """The driver that manages the server of ``state``: ``current`` when it recorded it, else one of
    the recorded kind on the same config (a process spawned as ``sim`` is stopped by the same group
    logic after the config moved to ``sglang``)."""
    if state.backend == current.NAME:
        return current
    return make_driver(replace(current.config, backend=state.backend))


def alive(state: ServerState) -> bool:
    """The recorded pid runs and is that very server: the same process (start time), not a reused
    pid, and, unless its service manager started it (``STOPS_BY_UNIT``: no launch token to carry),
    carrying the record's launch token. A record without a create time proves nothing: not alive."""
    if state.create_time is None or not is_running(state.pid, state.create_time):
        return False
    return driver_flags(state.backend).stops_by_unit or (state.pid is not None
                                                          and carries_token(state.pid, state.token))

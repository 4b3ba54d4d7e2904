"""What the console opens on: the configured server (the built-in simulator when no config is found),
whether its driver simulates (and then how many coding answers it gets wrong on purpose), and the line
the console says about the config first."""

from __future__ import annotations

from dataclasses import dataclass

from backends.knobs.config import ServerConfig


@dataclass(frozen=True)
class ConsoleSetup:
    config: ServerConfig
    simulated: bool  # the driver is the built-in simulator (its wrong answers are on purpose)
    note: str        # the first notification: which config, or that none was found
    sim_wrong: float | None = None  # the simulator's share of coding answers wrong on purpose; None: not it


def console_setup(config_path: str | None) -> ConsoleSetup:
    from backends.core.paths import find_config
    from backends.drivers.registry import driver_flags
    from backends.knobs.config import load_config

    config = load_config(config_path)
    if find_config(config_path) is None:
        note = "no config found: running the built-in SGLang simulator"
    else:
        note = f"config: {config.inferred or config.source}"
    simulated = driver_flags(config.backend).simulated
    if not simulated:
        return ConsoleSetup(config, simulated, note)
    from backends.sim import wrong_rate

    return ConsoleSetup(config, simulated, note, wrong_rate(config.extra_args))

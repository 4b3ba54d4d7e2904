"""``ddtune`` with no command: open the console on the configured server (the simulator if none)."""

from __future__ import annotations


def run(args) -> int:
    from backends.config import load_config
    from backends.paths import find_config
    from tui.app import DdtuneApp
    from tui.controller import ConsoleController

    config = load_config(getattr(args, "config", None))
    simulated = config.backend == "sim"
    if find_config(getattr(args, "config", None)) is None:
        config_note = "no config found: running the built-in SGLang simulator"
    else:
        config_note = f"config: {config.source}"
    app = DdtuneApp(ConsoleController(config, simulated=simulated), note=config_note)
    app.run()
    return 0

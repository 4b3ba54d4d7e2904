"""``ddtune`` with no command: open the console on the configured server (the simulator if none)."""

from __future__ import annotations


def run(args) -> int:
    from backends.core import find_config
    from backends.knobs import load_config
    from backends.server import driver_flags
    from tui.app import DdtuneApp
    from tui.controller import ConsoleController

    config = load_config(getattr(args, "config", None))
    simulated = driver_flags(config.backend).simulated
    if find_config(getattr(args, "config", None)) is None:
        config_note = "no config found: running the built-in SGLang simulator"
    else:
        config_note = f"config: {config.inferred or config.source}"
    load = getattr(args, "load", None)
    if load is not None and load < 1:
        from backends.core import UsageError

        raise UsageError(f"--load {load}: the coding load needs at least 1 stream", hint="e.g. ddtune --load 8")
    prompts = getattr(args, "load_prompts", None) or "coding"
    if prompts != "coding":
        from tui.commands._traffic import say_skipped
        from workloads.live import load_work

        say_skipped({prompts: load_work(prompts).prompts})  # a bad source is refused before the console opens
    controller = ConsoleController(config, simulated=simulated, load_concurrency=load or 8,
                                   autostart_load=load is not None, load_prompts=prompts)
    app = DdtuneApp(controller, note=config_note)
    app.run()
    return 0

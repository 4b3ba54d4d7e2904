"""``ddtune`` with no command: open the console on the configured server (the simulator if none)."""

from __future__ import annotations


def run(args) -> int:
    from backends.server import console_setup
    from tui.app import DdtuneApp
    from tui.controller import ConsoleController

    setup = console_setup(getattr(args, "config", None))
    load = getattr(args, "load", None)
    if load is not None and load < 1:
        from backends.core import UsageError

        raise UsageError(f"--load {load}: the coding load needs at least 1 stream", hint="e.g. ddtune --load 8")
    prompts = getattr(args, "load_prompts", None) or "coding"
    if prompts != "coding":
        from tui.commands._traffic import say_skipped
        from workloads.live import load_sources

        say_skipped({prompts: load_sources().read(prompts)})  # a bad source is refused before the console opens
    controller = ConsoleController(setup.config, simulated=setup.simulated, load_concurrency=load or 8,
                                   autostart_load=load is not None, load_prompts=prompts)
    app = DdtuneApp(controller, note=setup.note, sim_wrong=setup.sim_wrong)
    app.run()
    return 0

"""The sweep's server controller over backends.lifecycle's ServerManager.

``apply(config)`` turns a SweepConfig into a ServerConfig (the base config with the slot's knobs, or
the speculation-off baseline), then ``ServerManager.up()``: a server already running exactly that
config is re-attached (no restart), anything else is stopped and started, followed until ready,
and verified. A start that fails, or knobs the server does not report back, make ``Applied.ok``
false with the reason; a knob the server cannot take at all raises ConfigError before any restart.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from backends.config import ServerConfig
from workloads.sweep import Applied
from workloads.sweep_plan import SweepConfig

# extra_args that turn speculation on; the baseline drops them (flag + value)
_SPEC_VALUE_FLAGS = ("--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-draft-tokens",
                     "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-dflash-block-size")


def baseline_config(base: ServerConfig) -> ServerConfig:
    """The same server without speculative decoding: no draft model, every knob cleared."""
    args: list[str] = []
    skip = False
    for arg in base.extra_args:
        if skip:
            skip = False
            continue
        if arg in _SPEC_VALUE_FLAGS:
            skip = True
            continue
        if arg.split("=", 1)[0] in _SPEC_VALUE_FLAGS or arg.startswith("--speculative-"):
            continue
        args.append(arg)
    env = {k: v for k, v in base.env.items() if not k.startswith("SGLANG_DDTREE")}
    return replace(base, draft_model=None, knobs={k: None for k in base.knobs}, extra_args=tuple(args), env=env)


class ManagedController:
    """Brings the configured server to each sweep configuration through ServerManager."""

    def __init__(self, base: ServerConfig, on_note: Callable[[str], None] | None = None) -> None:
        self.base = base
        self.on_note = on_note or (lambda s: None)
        self._started = False

    def config_for(self, config: SweepConfig) -> ServerConfig:
        return baseline_config(self.base) if config.baseline else self.base.with_knobs(config.knobs)

    def restart_needed(self, config: SweepConfig) -> bool:
        from backends.state import load_state

        state = load_state()
        wanted = self.config_for(config)
        return not (state is not None and state.phase == "ready" and state.config_hash == wanted.config_hash()
                    and state.is_alive())

    def expected_restart_s(self) -> float | None:
        from backends.startup import StartupHistory

        medians = StartupHistory.default().medians(self.base.model)
        return sum(medians.values()) if medians else None

    async def apply(self, config: SweepConfig, progress: Callable[[str, str], None]) -> Applied:
        from backends.apikey import redact_argv
        from backends.lifecycle import ServerManager, fetch_server_info

        wanted = self.config_for(config)
        restart = self.restart_needed(config)
        manager = ServerManager(wanted, on_progress=lambda p: progress(p.phase, p.detail),
                                on_note=lambda s: progress("note", s))
        t0 = time.monotonic()
        state = await manager.up()
        took = time.monotonic() - t0
        self._started = True
        phases = manager.tracker.durations() if restart else {}
        key = manager.backend.api_key(state)
        info = {"pid": state.pid, "launch_command": " ".join(redact_argv(state.argv)) or None, "knobs": dict(state.knobs),
                "effective": dict(state.effective), "checks": [c.to_json() for c in state.checks],
                "mismatches": list(state.mismatches), "log_path": state.log_path,
                "config_hash": state.config_hash, "backend": state.backend}
        restart_s = took if restart else None
        if state.phase != "ready":
            return Applied(False, None, restart, state.reason or f"server {state.phase}", restart_s, phases, info)
        if state.mismatches:
            return Applied(False, None, restart, "knobs did not take effect: " + "; ".join(state.mismatches),
                           restart_s, phases, info)
        server_info = await fetch_server_info(state.url, key) or {}
        info["version"] = server_info.get("version")
        algorithm = server_info.get("speculative_algorithm")
        info["speculative_algorithm"] = algorithm
        if config.baseline and algorithm:
            return Applied(False, None, restart, f"baseline asked for no speculation, the server runs {algorithm}",
                           restart_s, phases, info)
        return Applied(True, state.url, restart, None, restart_s, phases, info, api_key=key)

    async def shutdown(self) -> None:
        """Stop the server this sweep left running (the last configuration)."""
        if not self._started:
            return
        from backends.lifecycle import ServerManager

        await ServerManager(self.base).down()

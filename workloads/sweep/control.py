"""The sweep's server controller over a backends.server ServerSession.

``apply(config)`` turns a SweepConfig into a ServerConfig (the base config with the slot's knobs, or
the speculation-off baseline), then ``ServerSession.apply()``: a server already running exactly that
config is re-attached (no restart), anything else is stopped and started, followed until ready,
and verified. A start that fails, or knobs the server does not report back, make ``Applied.ok``
false with the reason; a knob the server cannot take at all raises ConfigError before any restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from backends.core import Phase
from backends.core import key_name
from backends.knobs import baseline_config
from backends.knobs import ServerConfig
from backends.knobs import knob_text
from backends.server import ServerSession
from workloads.sweep.events import Applied, Progress
from workloads.sweep.plan import SweepConfig

class ManagedController:
    """Brings the managed server to each sweep configuration through one ServerSession.

    Pass the console's session and the console follows every restart of the sweep live; the
    headless sweep makes its own (``session=None``)."""

    def __init__(self, base: ServerConfig, on_note: Callable[[str], None] | None = None,
                 session: ServerSession | None = None) -> None:
        self.base = base
        self.on_note = on_note or (lambda s: None)
        self.session = session
        self._started = False
        self.before: ServerConfig | None = None  # the config the server ran when the sweep began
        self._before_known = False

    def config_for(self, config: SweepConfig) -> ServerConfig:
        """The server config of one configuration; its knobs checked by the base config's table (a
        resumed plan is a file: ConfigError before anything restarts for a value it could not hold)."""
        if config.baseline:
            return baseline_config(self.base)
        return self.base.with_knobs(self.base.checked_knobs(config.knobs, f"configuration {key_name(config.name)}"))

    def restart_needed(self, config: SweepConfig) -> bool:
        from backends.server import is_alive, recorded_server

        state = recorded_server()
        wanted = self.config_for(config)
        return not (state is not None and state.phase == Phase.READY and state.config_hash == wanted.config_hash()
                    and is_alive(state))

    def expected_restart_s(self) -> float | None:
        from backends.server import StartupHistory

        medians = StartupHistory.default().medians(self.base.startup_key())
        return sum(medians.values()) if medians else None

    async def apply(self, config: SweepConfig, progress: Progress) -> Applied:
        from backends.core import redact_argv
        from backends.server import NoteAdded, PhaseChanged

        wanted = self.config_for(config)
        if not self._before_known:
            self.remember_before(self.running_config())
        restart = self.restart_needed(config)
        if self.session is None:
            self.session = ServerSession(wanted, stream_log=False)
        session = self.session

        def relay(event) -> None:
            if isinstance(event, PhaseChanged):
                progress(event.progress.phase, event.progress.detail)
            elif isinstance(event, NoteAdded):
                progress("note", event.text)

        session.subscribe(relay)
        t0 = time.monotonic()
        self._started = True  # before the start: one cut short (Ctrl-C) still leaves its server to shutdown()
        try:
            state = await session.apply(wanted)
        finally:
            session.unsubscribe(relay)
        took = time.monotonic() - t0
        phases = session.tracker.durations() if restart else {}
        key = session.api_key()
        info = {"pid": state.pid, "launch_command": " ".join(redact_argv(state.argv)) or None,
                "knobs": dict(state.knobs),
                "effective": dict(state.effective), "checks": [c.to_json() for c in state.checks],
                "mismatches": list(state.mismatches), "log_path": state.log_path,
                "config_hash": state.config_hash, "backend": state.backend}
        restart_s = took if restart else None
        if state.phase != Phase.READY:
            return Applied(False, None, restart, state.reason or f"server {state.phase}", restart_s, phases, info)
        if state.mismatches:
            return Applied(False, None, restart, "knobs did not take effect: " + "; ".join(state.mismatches),
                           restart_s, phases, info)
        server_info = session.server_info or {}
        info["version"] = server_info.get("version")
        algorithm = server_info.get("speculative_algorithm")
        info["speculative_algorithm"] = algorithm
        if config.baseline and algorithm:
            return Applied(False, None, restart, f"baseline asked for no speculation, the server runs {algorithm}",
                           restart_s, phases, info)
        return Applied(True, state.url, restart, None, restart_s, phases, info, api_key=key)

    def remember_before(self, config: ServerConfig | dict | None) -> None:
        """What to return the server to at the end: a config, the knobs of one (as a sweep's
        manifest keeps them, so a resumed sweep still knows), or None (stop it)."""
        if isinstance(config, dict):
            config = self.base.with_knobs(self.base.checked_knobs(config, "the manifest's server_before"))
        self.before, self._before_known = config, True

    def running_config(self) -> ServerConfig | None:
        """The base config with the knobs of the server running now (None when none of ours runs)."""
        from backends.server import is_alive, recorded_server

        state = recorded_server()
        if state is None or state.phase != Phase.READY or state.backend != self.base.backend or not is_alive(state):
            return None
        return self.base.with_knobs(dict(state.knobs))

    async def shutdown(self) -> str | None:
        """Leave the server as the sweep found it: back on the config it ran before (restarted if
        the sweep changed it), or stopped when none ran. Returns what was done, for the user."""
        if not self._started:
            return None
        session = self.session or ServerSession(self.base, stream_log=False)
        try:
            if self.before is None:
                await session.stop()
                return "stopped the server (none was running before the sweep)"
            knobs = ", ".join(f"{k}={knob_text(v)}" for k, v in self.before.knobs.items())
            state = await session.apply(self.before)
            if state.phase != Phase.READY:
                return f"could not return the server to {knobs}: {state.reason}"
            return f"returned the server to the config it ran before the sweep ({knobs})"
        finally:
            if session is not self.session:
                await session.close()

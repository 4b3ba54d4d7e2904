"""``ddtune doctor``'s use case: the setup checked, one typed ``Check`` per line, each problem with its fix.

In order: ddtune's own packages (only when another distribution's ``presets`` or ``workloads``, say,
is found ahead of ddtune's), the config, the state dir, SGLang's version, the server's ``--help`` and the launch plan
of the knobs, the port, the recorded server, and (last, ``DoctorReport.gpu``) GPU telemetry. The
grading sandbox belongs to ``workloads``: the command checks it between the two through its own face.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.core.phase import Phase
from backends.core.errors import DdtuneError


@dataclass(frozen=True)
class Check:
    """One line of the doctor: ``ok`` True (passes), None (a warning: things still work), False (fails)."""

    ok: bool | None
    what: str
    detail: str = ""


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[Check, ...]
    gpu: Check | None  # None when the config could not be read: nothing after it was checked

    @property
    def failed(self) -> bool:
        return any(c.ok is False for c in (*self.checks, *([self.gpu] if self.gpu else [])))


def _packages() -> list[Check]:
    """The packages line, only when one of ddtune's packages is another's (silent when all are its own)."""
    from backends.core.install import foreign_packages
    from backends.core.paths import ISOLATED, PACKAGES

    shadows = foreign_packages(PACKAGES)
    if not shadows:
        return []
    fails = any(s.hides for s in shadows)
    return [Check(False if fails else None, "packages",
                  "; ".join(s.sentence() for s in shadows) + f" (fix: {ISOLATED})")]


def run_doctor(config_path: str | None) -> DoctorReport:
    """Every check but the sandbox's, in the order the doctor prints them."""
    from backends.core.apikey import redact_argv
    from backends.core.paths import state_dir
    from backends.core.statefs import probe_room
    from backends.knobs.config import load_config
    from backends.knobs.plan import plan_launch
    from backends.knobs.serverhelp import sglang_version
    from backends.launch.process import port_owner
    from backends.server.release import gpu_holders
    from backends.server.session import ServerSession

    checks = _packages()
    try:
        config = load_config(config_path)  # an inferred backend is said on its line below
    except DdtuneError as exc:
        checks.append(Check(False, "config", f"{exc.message} (fix: {exc.hint})"))
        return DoctorReport(tuple(checks), None)
    checks.append(Check(True, "config", f"{config.source}, backend {config.backend}"
                        + (" (inferred: no backend written)" if config.inferred else "") + f", model {config.model}"))
    if config.inferred:
        checks.append(Check(None, "backend", config.inferred))
    try:
        path = state_dir()
        probe_room(path / ".doctor", b"ok")  # as ddtune writes its records: no link followed
        checks.append(Check(True, "state dir", str(path)))
    except DdtuneError as exc:
        checks.append(Check(False, "state dir",
                            f"{exc.message} (fix: {exc.hint or 'set DDTUNE_STATE_DIR to a writable directory'})"))
    session = ServerSession(config, stream_log=False)  # reads only: its driver and the record as it stands
    driver = session.backend
    state = session.current()
    found = sglang_version(config, driver, state)  # as the console finds it
    checks.append(Check(True if found.version else None, "SGLang", f"{found.version} ({found.source})"
                        if found.version else f"version not found: {found.source}"))
    if driver.CAN_START:
        try:
            helptext = driver.learn_help()
            cached = f" (cached for SGLang {helptext.version})" if helptext.cached else ""
            checks.append(Check(True, "server --help", " ".join(driver.command_prefix()) + cached))
            plan = plan_launch(config, helptext.text, driver.command_prefix(), helptext.version or "unknown")
            routes = ", ".join(f"{k} -> {r.flag or 'env ' + str(r.env)} ({r.source})" for k, r in plan.routes.items())
            checks.append(Check(True, "knobs", routes or "no knobs set"))
            checks.append(Check(True, "launch command", " ".join(redact_argv(plan.argv))))
        except DdtuneError as exc:
            checks.append(Check(False, "server/knobs", f"{exc.message} (fix: {exc.hint})"))
    attached = driver.ATTACHES  # someone else's server: its port is not ours to check
    owner = port_owner(config.port) if not attached else None
    ours = state is not None and state.pid is not None and owner is not None and owner.pid == state.pid
    if owner is None:
        checks.append(Check(True, "port", f"{config.port} is free" if not attached else config.base_url))
    elif ours:
        checks.append(Check(True, "port", f"{config.port} is held by our server pid {owner.pid}"))
    else:
        checks.append(Check(False, "port", f"{owner.describe()} (fix: stop it or change [server] port)"))
    if state is None:
        checks.append(Check(True, "server state", "no server recorded"))
    else:
        checks.append(Check(state.phase not in (Phase.STALE, Phase.FAILED) or None, "server state",
                            f"{state.phase}, " + (f"pid {state.pid}" if state.pid is not None
                                                  else f"attached to {state.url}")
                            + (f" ({state.reason.splitlines()[0]})" if state.reason else "")))
    holders, why = gpu_holders(set())
    gpu = Check(True if holders is not None else None, "GPU telemetry", "NVML works" if holders is not None else
                f"{why}; restarts will not wait for GPU memory release")
    return DoctorReport(tuple(checks), gpu)

"""ddtune doctor: check the setup, one line per check, with the fix for each problem."""

from __future__ import annotations

HELP = "check the config, the server interpreter and flags, the knobs, the port, the state, the GPU, the sandbox"
EXAMPLES = """\
examples:
  ddtune doctor
  ddtune --config box.toml doctor

Exit 0 when every check passes (warnings allowed), 1 when one fails.
"""


def add_arguments(parser) -> None:
    pass


def _line(ok: bool | None, what: str, detail: str = "") -> None:
    mark = {True: "ok  ", False: "FAIL", None: "warn"}[ok]
    print(f"[{mark}] {what}" + (f": {detail}" if detail else ""))


def run(args) -> int:
    from backends.core import DdtuneError, probe_room, state_dir
    from backends.knobs import load_config

    failed = False
    try:
        config = load_config(getattr(args, "config", None))  # an inferred backend is said on its line below
    except DdtuneError as exc:
        _line(False, "config", f"{exc.message} (fix: {exc.hint})")
        return 1
    _line(True, "config", f"{config.source}, backend {config.backend}"
          + (" (inferred: no backend written)" if config.inferred else "") + f", model {config.model}")
    if config.inferred:
        _line(None, "backend", config.inferred)
    try:
        path = state_dir()
        probe_room(path / ".doctor", b"ok")  # as ddtune writes its records: no link followed
        _line(True, "state dir", str(path))
    except DdtuneError as exc:
        failed = True
        _line(False, "state dir", f"{exc.message} (fix: {exc.hint or 'set DDTUNE_STATE_DIR to a writable directory'})")

    from backends.knobs import sglang_version
    from backends.server import ServerSession, gpu_holders, port_owner

    session = ServerSession(config, stream_log=False)  # reads only: its driver and the record as it stands
    driver = session.backend
    state = session.current()
    found = sglang_version(config, driver, state)  # as the console finds it
    _line(True if found.version else None, "SGLang", f"{found.version} ({found.source})" if found.version
          else f"version not found: {found.source}")
    if driver.CAN_START:
        try:
            helptext = driver.learn_help()
            cached = f" (cached for SGLang {helptext.version})" if helptext.cached else ""
            _line(True, "server --help", " ".join(driver.command_prefix()) + cached)
            from backends.knobs import plan_launch

            plan = plan_launch(config, helptext.text, driver.command_prefix(), helptext.version or "unknown")
            routes = ", ".join(f"{k} -> {r.flag or 'env ' + str(r.env)} ({r.source})" for k, r in plan.routes.items())
            _line(True, "knobs", routes or "no knobs set")
            from backends.core import redact_argv

            _line(True, "launch command", " ".join(redact_argv(plan.argv)))
        except DdtuneError as exc:
            failed = True
            _line(False, "server/knobs", f"{exc.message} (fix: {exc.hint})")
    attached = driver.ATTACHES  # someone else's server: its port is not ours to check
    owner = port_owner(config.port) if not attached else None
    ours = state is not None and state.pid is not None and owner is not None and owner.pid == state.pid
    if owner is None:
        _line(True, "port", f"{config.port} is free" if not attached else config.base_url)
    elif ours:
        _line(True, "port", f"{config.port} is held by our server pid {owner.pid}")
    else:
        failed = True
        _line(False, "port", f"{owner.describe()} (fix: stop it or change [server] port)")
    if state is None:
        _line(True, "server state", "no server recorded")
    else:
        _line(state.phase != "stale" and state.phase != "failed" or None, "server state",
              f"{state.phase}, " + (f"pid {state.pid}" if state.pid is not None else f"attached to {state.url}")
              + (f" ({state.reason.splitlines()[0]})" if state.reason else ""))
    from workloads.grading import isolation, protections

    try:
        sandbox = isolation()
        _line(sandbox.kind != "rlimit" or None, "grading sandbox", f"{sandbox.kind}: {sandbox.detail}"
              + (" (fix: apt-get install bubblewrap)" if sandbox.kind == "rlimit" else ""))
        for layer in protections(sandbox.kind):  # a missing layer is a warning: grading still runs
            _line(layer.active or None, f"  {layer.name}", layer.detail)
    except DdtuneError as exc:
        failed = True
        _line(False, "grading sandbox", f"{exc.message} (fix: {exc.hint})")
    holders, why = gpu_holders(set())
    _line(True if holders is not None else None, "GPU telemetry", "NVML works" if holders is not None else
          f"{why}; restarts will not wait for GPU memory release")
    return 1 if failed else 0

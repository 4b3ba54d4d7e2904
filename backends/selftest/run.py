"""The order of ``ddtune selftest``: build and flags side by side, start (agreeing draft), draft
runner line, acceptance, GPU, knob restart (random draft, another window), collapse alarm, stop.

A check that cannot run because an earlier one failed is a skip naming that check; the stop runs
whatever happened, so nothing is left running.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace

from backends.core.phase import Phase
from backends.knobs.config import ServerConfig
from backends.core.errors import UsageError
from backends.knobs.serverhelp import cached_helps, seed_helps
from backends.selftest.checks import (
    Check, Report, _acceptance_checks, _collapse_check, _first_line, _flags_check, _stop_check, draft_runner_check,
    gpu_check, temporary_state_dir,
)
from backends.selftest.engines import engine_test
from backends.selftest.plan import block_size, derive, free_port, split_extra_args

LATER = ("ready", "draft_runner", "acceptance", "agree", "gpu", "knob_restart", "collapse_alarm", "stop")


def _skip_rest(checks: list[Check], after: str, stop: bool = True) -> None:
    """The checks that cannot run now, as skips (``stop``: nothing was started, so no stop check either)."""
    done = {c.name for c in checks}
    checks.extend(Check(name, "skip", f"needs {after}") for name in LATER
                  if name not in done and (stop or name != "stop"))


async def run_selftest(config: ServerConfig, on_progress: Callable | None = None, on_note: Callable | None = None, *,
                       keep: bool = False, ready_timeout_s: float = 900.0, work_dir: str | None = None) -> Report:
    """The selftest's report; its server's start is told through ``on_progress`` (where it stands) and
    ``on_note`` (what ddtune did), as the headless commands tell theirs."""
    from backends.drivers.registry import make_driver
    from backends.launch.process import tree_pids
    from backends.server import ServerSession, driver_flags
    from backends.server.commands import narrated

    if not driver_flags(config.backend).spawns:
        raise UsageError(f"selftest starts a server of its own; backend {config.backend!r} cannot",
                         hint='use backend = "sglang" with python = the interpreter that has sglang, '
                              'backend = "llamacpp" (or no config: the simulator)')
    block = block_size(config)
    kept, aside = split_extra_args(config.extra_args)
    report = Report([], [{"args": list(a.args), "why": a.why} for a in aside], config.backend,
                    engine=engine_test(config).label)
    root = work_dir or tempfile.mkdtemp(prefix="ddtune-selftest-")
    report.work_dir = root
    state_dir = os.path.join(root, "state")
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    checks = report.checks
    helps = cached_helps()  # the user's state dir: their SGLang's --help, cached by ddtune before
    models = os.path.join(root, "models")
    try:
        # the flags are read from the server's --help while the builder writes the tiny models: two
        # processes side by side (the derived config names where the builder writes; the flags check
        # reads no model)
        derived = derive(config, os.path.join(models, "target"), os.path.join(models, "draft-agree"),
                         free_port(config.host), kept, block, ready_timeout_s)
        test = engine_test(derived)
        if test.start_at_block and derived.knobs.get(test.restart_knob) is None:
            # the draft's whole block (block - 1 drafted tokens): what "near the block" is judged on
            derived = derived.with_knobs({test.restart_knob: block - 1})
        with temporary_state_dir(state_dir):
            seed_helps(helps)  # a --help this SGLang printed before is not asked again
            (build, built), (flags, report.version) = await asyncio.gather(
                asyncio.to_thread(test.build, config, models, block),
                asyncio.to_thread(_flags_check, derived, make_driver(derived)))
            checks.append(build)
            if built is None:
                _skip_rest(checks, "build")
                return report
            derived = replace(derived, model=built["target"], draft_model=built["draft_agree"])
            checks.append(flags)
            if flags.status == "fail":
                _skip_rest(checks, "flags")
                return report
            await _serve(derived, built, block, report, narrated(on_progress, on_note), tree_pids, ServerSession)
    finally:
        if not keep and report.ok:
            shutil.rmtree(root, ignore_errors=True)
            report.work_dir = None
    return report


async def _serve(derived: ServerConfig, built: dict, block: int, report: Report, on_event, tree_pids,
                 session_cls) -> None:
    checks = report.checks
    session = session_cls(derived, wait_for_lock=False, stream_log=True)
    session.subscribe(on_event)
    pids: set[int] = set()
    logs: list[str] = []
    report.log_paths = logs
    try:
        state = await session.up()
        logs.append(state.log_path or "")
        if state.pid:
            pids |= tree_pids(state.pid)
        if state.phase != Phase.READY:
            checks.append(Check("ready", "fail", _first_line(state.reason),
                                f"read the server log {state.log_path}; the same start would fail with your model"))
            _skip_rest(checks, "ready", stop=False)
            return
        took = state.ready_at - state.started_at if state.ready_at and state.started_at else 0.0
        test = engine_test(derived)
        checks.append(Check("ready", "pass", f"pid {state.pid} generated a token {took:.1f} s after launch "
                            f"(the pid that listens, probed by {test.dialect.generate_path})"))
        checks.append(draft_runner_check(state, derived, test=test))
        key = session.api_key()
        checks.extend(await _acceptance_checks(state.url, key, block, test, derived, state.effective))
        pids |= tree_pids(state.pid) if state.pid else set()
        checks.append(gpu_check(derived, pids))
        knob = test.restart_knob
        window = test.move(derived, block)
        moved = derived.with_knobs({knob: window})
        random = _with_draft(moved, built["draft_random"])
        state = await session.restart(config=random)
        logs.append(state.log_path or "")
        if state.pid:
            pids |= tree_pids(state.pid)
        if state.phase != Phase.READY:
            checks.append(Check("knob_restart", "fail", f"the restart to {knob} {window} failed: "
                                f"{_first_line(state.reason)}", f"read the server log {state.log_path}"))
            checks.append(Check("collapse_alarm", "skip", "needs knob_restart"))
            return
        verdict = draft_runner_check(state, random, name="knob_restart", test=test)
        checks.append(Check("knob_restart", verdict.status, f"restarted to {knob} {window} (pid {state.pid}): "
                            f"{verdict.detail}", verdict.fix))
        checks.append(await _collapse_check(session, state.url, session.api_key(), test.dialect))
    finally:
        checks.append(await _stop_check(session, pids, derived.port))
        await session.close()


def _with_draft(config: ServerConfig, draft: str) -> ServerConfig:
    return replace(config, draft_model=draft)

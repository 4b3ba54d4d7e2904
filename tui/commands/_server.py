"""Shared plumbing of the headless server commands (up, restart, down, status, doctor).

Progress goes to stderr as plain text; ``--json`` output is one JSON document on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def add_wait_argument(parser) -> None:
    parser.add_argument("--no-wait", action="store_true",
                        help="fail at once when another ddtune is starting, restarting or stopping the server "
                             "(default: wait for it, saying whom you wait for)")


EXIT_MISMATCH = 3  # ready, but a requested knob did not take effect


def add_replace_argument(parser) -> None:
    parser.add_argument("--replace", action="store_true",
                        help="stop a server that another config file started in this state dir and start this "
                             "one's (default: refuse, exit 2, naming it: a typo in --config never throws away "
                             "a model load)")


def add_mismatch_argument(parser) -> None:
    parser.add_argument("--allow-mismatch", action="store_true",
                        help=f"exit 0 even when the server is ready but a knob did not take effect "
                             f"(default: exit {EXIT_MISMATCH}, so a script does not go on measuring the wrong config)")


def add_knob_arguments(parser, preset: bool = True) -> None:
    if preset:
        parser.add_argument(
            "--preset", metavar="P", help="knob preset: a shipped name (b8-t4-w2048, ...) or a .toml file"
        )
    parser.add_argument(
        "--set",
        dest="sets",
        metavar="KNOB=VALUE",
        action="append",
        default=[],
        help="set one knob, e.g. --set window=1024, --set window=none (repeatable); the knobs are listed below",
    )
    parser.epilog = (parser.epilog or "") + knobs_epilog()


def knobs_epilog() -> str:
    """The knob table as --help text: name, what it is and its unit, what "none" leaves."""
    from backends.knobs import knob_form

    shipped = knob_form().help
    width = max(len(name) for name in shipped) + 2
    lines = [f"  {name:<{width}}{text}" for name, text in shipped.items()]
    return ("\nknobs (--set KNOB=VALUE; a [knob.NAME] declaration in the config adds your own, docs/knobs.md):\n"
            + "\n".join(lines) + "\n")


_SAID: set[str] = set()  # the configs whose inferred backend this process has said (once each)


def load_config(args, preset: str | None = None, sets: list[str] | None = None, keep_running_knobs: bool = False,
                no_speculation: bool = False):
    """The config the command names (backends.server.requested_config), with a --preset and --set
    knobs when given (without speculative decoding for ``no_speculation``); a backend it inferred (no
    ``backend`` written) is said once."""
    from backends.server import requested_config as requested

    config = requested(getattr(args, "config", None), preset, sets or [], keep_running_knobs, note, no_speculation)
    if config.inferred and config.source not in _SAID:
        _SAID.add(config.source)
        err(f"ddtune: {config.inferred}")
    return config


def requested_config(args, keep_running_knobs: bool = False):
    """The config with the command's --preset and --set knobs (restart: over the running server's),
    without speculative decoding when it asks (``--no-speculation``)."""
    return load_config(args, getattr(args, "preset", None), getattr(args, "sets", None), keep_running_knobs,
                       bool(getattr(args, "no_speculation", False)))


def err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def print_progress(progress) -> None:
    # from this server's own earlier starts only (none yet, or an endpoint: no ETA); none once it ended
    eta = "" if progress.eta_s is None or progress.phase in ("ready", "failed") else f", ETA {progress.eta_s:.0f}s"
    pid = f" [pid {progress.pid}]" if progress.pid else ""
    detail = f": {progress.detail}" if progress.detail else ""
    err(f"[{progress.elapsed_s:6.1f}s] {progress.phase}{detail}{pid}{eta}")


def note(text: str) -> None:
    err(f"          {text}")


def drive(config, args, command: str, **options):
    """Run one session command (``up``, ``restart``, ``stop``) to its end; the record it left."""
    return run_command(config, args, command, **options).state


def run_command(config, args, command: str, **options):
    """Run one session command (``up``, ``restart``, ``stop``, ``down``) to its end, its progress on
    stderr; a Ctrl-C during a start says what it left running and exits 130."""
    from backends.server import run_server_command

    outcome = run_server_command(config, command, wait_for_lock=not getattr(args, "no_wait", False),
                                 on_progress=print_progress, on_note=note, **options)
    if outcome.interrupted is not None:
        err(f"ddtune: interrupted; {outcome.interrupted}")
        raise SystemExit(130)
    return outcome


def report_final(state, allow_mismatch: bool = False) -> int:
    """Print how a start ended; 0 when ready, 1 when failed, EXIT_MISMATCH when ready but a knob
    did not take effect (unless ``allow_mismatch``)."""
    if state.phase != "ready":
        err(f"ddtune: server failed: {state.reason}")
        return 1
    took = f" in {state.ready_at - state.started_at:.1f}s" if state.ready_at else ""
    who = f"pid {state.pid}" if state.pid else "attached"
    err(f"ready{took}: {who} at {state.url}")
    eff = state.effective or {}  # the engine's checked settings first, then what the declared knobs report
    if state.engine:
        err(f"engine: {state.engine}")
    err("effective: " + ", ".join(f"{k}={v}" for k, v in eff.items()))
    for check in state.checks:
        if check.status == "mismatch":
            err(f"MISMATCH: {check.sentence}")
        elif check.status == "unverified" and check.requested is not None:
            err(f"unverified: {check.sentence}")
    if any(check.status == "mismatch" for check in state.checks) and not allow_mismatch:
        err(f"ddtune: the server is up but does not run the requested knobs (exit {EXIT_MISMATCH}; "
            f"fix the knob's flag or [knobs.map] route, or pass --allow-mismatch to go on anyway)")
        return EXIT_MISMATCH
    return 0


def print_json(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")


def ago(ts: float | None) -> str:
    return "-" if not ts else f"{time.time() - ts:.0f}s ago"

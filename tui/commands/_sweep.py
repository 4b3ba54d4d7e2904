"""Shared body of ``ddtune sweep`` and ``ddtune ab``: options, and the run (workloads.sweep.run_sweep,
serial or in lanes) with its signal handling; its lines are _sweep_print.py's."""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import TypeVar

from tui.commands._options import count_option


def add_matrix_options(parser, contexts: list[int], concurrency: list[int], max_tokens: int) -> None:
    parser.add_argument("--contexts", type=count_option("context", 0), nargs="+", default=None, metavar="TOKENS",
                        help="bring each prompt to this many tokens with real text; 0: as it is (default "
                             f"{' '.join(map(str, contexts))}, or 0 with --prompts)")
    parser.add_argument("--concurrency", type=count_option("concurrency"), nargs="+", default=None, metavar="C",
                        help=f"requests in flight per cell (default {' '.join(map(str, concurrency))})")
    parser.add_argument("--max-tokens", type=count_option("max_tokens"), default=None, metavar="N",
                        help=f"output tokens per request (default {max_tokens})")
    parser.add_argument("--requests-per-cell", type=count_option("requests"), default=None, metavar="N",
                        help="requests measured per cell (default: 2 x concurrency, at least 8)")
    parser.add_argument("--warmup", type=count_option("requests", 0), default=None, metavar="N",
                        help="unrecorded requests before each cell (default 1)")
    parser.add_argument("--out", metavar="DIR",
                        help="the sweep's folder (default: $DDTUNE_STATE_DIR/runs/<time>-sweep)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the interrupted sweep in --out DIR (default: the latest one)")
    parser.add_argument("--keep-server", action="store_true",
                        help="leave the last configuration's server running (default: return the server to "
                             "the config it ran before the sweep, or stop it when none was running)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document on stdout")
    parser.add_argument("--api-key", metavar="KEY", default=None, help="API key (default: $DDTUNE_API_KEY)")
    from tui.commands._traffic import add_traffic_options

    add_traffic_options(parser)


def run_sweep(args, presets: list[str], plan, kind: str) -> int:
    """Create (``presets`` under ``plan``: build_plan's options) or resume (``plan`` None) the sweep
    (workloads.sweep.run_sweep), run it, print the report: 130 on Ctrl-C or SIGTERM (with the resume
    command), 1 when a configuration failed, else 0."""
    import json

    from tui.commands._lanes import lane_options
    from tui.commands._server import err, load_config, note
    from tui.commands._sweep_print import LinePrinter
    from workloads.sweep import SweepSpec, SweepView, run_sweep as run

    spec = SweepSpec(load_config(args), None, kind, args.out, args.resume, **lane_options(args),
                     presets=None if plan is None else presets, plan_options=plan,
                     keep_server=args.keep_server, api_key=args.api_key,
                     say=err, note=note)
    printer = LinePrinter(SweepView())
    outcome = until_done(lambda: run(spec, printer), printer, "sweep", f"ddtune {kind}", args.out)
    if outcome is None:
        return 130
    if args.json:
        sys.stdout.write(json.dumps(outcome.to_json()) + "\n")
    else:
        sys.stdout.write(outcome.markdown())
    return 1 if outcome.failures else 0


T = TypeVar("T")


def until_done(start: Callable[[], Coroutine[object, object, T]], printer, what: str, command: str,
               out: str | None) -> T | None:
    """Run a sweep's or a search's use case to its end, SIGTERM counting as Ctrl-C: its outcome, or None
    when interrupted, with the command that continues it on stderr (its folder: the printer's, once the
    run started, else --out; with neither, nothing was recorded to continue)."""
    import asyncio
    import signal

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)  # type: ignore[union-attr]
        try:
            return await start()
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        where = printer.path or out
        sys.stderr.write(f"{what} interrupted; continue it with: {command} --resume --out {where}\n" if where
                         else f"{what} interrupted before it started\n")
        return None

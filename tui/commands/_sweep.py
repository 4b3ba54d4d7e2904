"""Shared body of ``ddtune sweep`` and ``ddtune ab``: options, and the run with its signal handling
(serial here, parallel lanes in tui/commands/_lanes.py; their printers in _sweep_print.py)."""

from __future__ import annotations

import sys

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


def check_prompts(plan) -> None:
    """Read the plan's prompt sources before any server is touched: a bad one is refused (exit 2),
    a malformed record is one line on stderr."""
    from tui.commands._traffic import say_skipped
    from workloads.bench import load_sets

    if plan is not None:
        say_skipped(load_sets(plan.bench)[0])


def run_sweep(args, plan, kind: str) -> int:
    """Create or resume the sweep, run it, print the report; 0 when every run succeeded."""
    import asyncio
    import os
    import signal

    from tui.commands._lanes import prepare_parallel, wants_lanes
    from tui.commands._server import load_config
    from tui.commands._sweep_print import EventPrinter
    from workloads.sweep import ManagedController, SweepEngine, SweepStore, begin_serial, resume_serial

    check_prompts(plan)
    resumed = SweepStore.open(args.out, kind).read() if args.resume else None
    if wants_lanes(args, resumed):
        main_of_lanes, path = prepare_parallel(args, plan, kind)
        return run_and_report(main_of_lanes, path, args, kind)
    config = load_config(args)
    controller = ManagedController(config)
    if args.resume:
        store = resume_serial(controller, args.out, kind)
        plan = store.plan()
    else:
        store = begin_serial(plan, controller, out=args.out, kind=kind)
    printer = EventPrinter()
    api_key = args.api_key or os.environ.get("DDTUNE_API_KEY") or None
    engine = SweepEngine(plan, store, controller, api_key=api_key, on_event=printer,
                         expected_restart_s=controller.expected_restart_s())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)  # type: ignore[union-attr]
        try:
            await engine.run()
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            if not args.keep_server:
                done = await asyncio.shield(controller.shutdown())
                if done:
                    sys.stderr.write(f"sweep: {done}\n")

    return run_and_report(main, store.path, args, kind)


def run_and_report(main, path, args, kind: str) -> int:
    """Run a sweep's coroutine function, then print its report: 130 on Ctrl-C (with the resume
    command), 1 when a configuration failed, else 0. Shared by the serial and the lane sweep."""
    import asyncio
    import json

    from workloads.report import sweep_report, to_json, to_markdown

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        sys.stderr.write(f"sweep interrupted; continue it with: ddtune {kind} --resume --out {path}\n")
        return 130
    report = sweep_report(path)
    if args.json:
        sys.stdout.write(json.dumps({"sweep": str(path), "report": to_json(report)}) + "\n")
    else:
        sys.stdout.write(to_markdown(report))
    return 1 if report.failures else 0

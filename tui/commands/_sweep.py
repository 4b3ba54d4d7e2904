"""Shared body of ``ddtune sweep`` and ``ddtune ab``: options, the run with its signal handling,
and the plain-text event printer (the engine itself prints nothing)."""

from __future__ import annotations

import sys

from tui.commands._options import non_negative_int, positive_int


def add_matrix_options(parser, contexts: list[int], concurrency: list[int], max_tokens: int) -> None:
    parser.add_argument("--contexts", type=positive_int, nargs="+", default=None, metavar="TOKENS",
                        help=f"prompt sizes in tokens (default {' '.join(map(str, contexts))})")
    parser.add_argument("--concurrency", type=positive_int, nargs="+", default=None, metavar="C",
                        help=f"requests in flight per cell (default {' '.join(map(str, concurrency))})")
    parser.add_argument("--max-tokens", type=positive_int, default=None, metavar="N",
                        help=f"output tokens per request (default {max_tokens})")
    parser.add_argument("--requests-per-cell", type=positive_int, default=None, metavar="N",
                        help="requests measured per cell (default: 2 x concurrency, at least 8)")
    parser.add_argument("--warmup", type=non_negative_int, default=None, metavar="N",
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


class EventPrinter:
    """One line on stderr per sweep event worth a line."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.total = 0
        self.last_phase: tuple[int, str] | None = None

    def _eta(self, eta: float | None) -> str:
        return "" if eta is None else f"  (ETA {eta / 60:.1f} min)" if eta >= 120 else f"  (ETA {eta:.0f} s)"

    def __call__(self, event) -> None:
        from workloads.sweep import engine as ev
        from workloads.stats.metrics import cell_acceptance, cell_acceptance_source

        w = lambda text: (self.stream.write(text + "\n"), self.stream.flush())
        if isinstance(event, ev.SweepStarted):
            self.total = len(event.slots)
            done = f", {len(event.done)} already done (resuming)" if event.done else ""
            w(f"sweep: {self.total} run(s){done}; folder {event.path}")
        elif isinstance(event, ev.SlotStarted):
            s = event.slot
            w(f"[{s.index + 1}/{self.total}] {s.config} (run {s.repeat}): "
              f"{'restarting the server' if event.restart else 'server already runs it'}{self._eta(event.eta_s)}")
        elif isinstance(event, ev.ServerPhaseChanged):
            key = (event.slot.index, event.phase)
            if key != self.last_phase:
                self.last_phase = key
                w(f"    {event.phase}{': ' + event.detail if event.detail else ''}")
        elif isinstance(event, ev.ServerApplied):
            a = event.applied
            took = f" in {a.restart_s:.1f} s" if a.restart_s is not None else ""
            w(f"    server {'ready' + took if a.ok else 'FAILED: ' + (a.reason or '').splitlines()[0]}")
        elif isinstance(event, ev.CellFinished):
            c = event.cell
            tok = c.get("output_tok_s")
            acc, source = cell_acceptance(c), cell_acceptance_source(c)
            w(f"    cell {event.cells_done}/{event.cells_total}: ctx {c['context']} c {c['concurrency']}: "
              f"{tok or 0:.1f} tok/s" + (f", accept {acc:.2f} ({source})" if acc else "") + self._eta(event.eta_s))
        elif isinstance(event, ev.EvalFinished):
            verdicts = event.summary
            w(f"    coding eval: pass {verdicts.get('pass', 0)}/{sum(verdicts.values())}")
        elif isinstance(event, ev.LosslessChecked):
            from workloads.sweep.lossless import describe

            w(f"    {describe(event.result)}")
        elif isinstance(event, ev.SlotFinished):
            r = event.record
            if r.status != "done":
                w(f"    {r.slot.config} run {r.slot.repeat} FAILED (recorded, sweep goes on): "
                  f"{(r.reason or '').splitlines()[0] if r.reason else ''}")
        elif isinstance(event, ev.SweepFinished):
            w(f"sweep {event.status}: {event.done} run(s) done, {event.failed} failed; folder {event.path}")


def run_sweep(args, plan, kind: str) -> int:
    """Create or resume the sweep, run it, print the report; 0 when every run succeeded."""
    import asyncio
    import os
    import signal

    from tui.commands._server import load_config
    from workloads.runs.provenance import host_provenance
    from workloads.sweep.control import ManagedController
    from workloads.sweep.engine import SweepEngine
    from workloads.sweep.plan import SweepStore

    from tui.commands._lanes import run_parallel, wants_lanes

    resumed = SweepStore.open(args.out, kind).read() if args.resume else None
    if wants_lanes(args, resumed):
        return run_parallel(args, plan, kind)
    config = load_config(args)
    controller = ManagedController(config)
    if args.resume:
        store = SweepStore.open(args.out, kind)
        plan = store.plan()
        before = store.read().get("server_before", "unknown")  # older sweeps did not record it
        if before != "unknown":
            controller.remember_before(before["knobs"] if isinstance(before, dict) else None)
    else:
        running = controller.running_config()
        controller.remember_before(running)
        store = SweepStore.create(plan, {"config_source": config.source, "backend": config.backend,
                                         "model": config.model, "host": host_provenance(),
                                         "server_before": None if running is None else {"knobs": running.knobs}},
                                  args.out, kind)
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

    return run_and_report(main, args, kind, store.path)


def run_and_report(main, args, kind: str, path) -> int:
    """Run a sweep's coroutine function, then print its report: 130 on Ctrl-C (with the resume
    command), 1 when a configuration failed, else 0. Shared by the serial and the lane sweep."""
    import asyncio
    import json

    from workloads.report.compare import build_report
    from workloads.report.render import to_json, to_markdown
    from workloads.report.inputs import read_sweep

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        sys.stderr.write(f"sweep interrupted; continue it with: ddtune {kind} --resume --out {path}\n")
        return 130
    report = build_report(read_sweep(path))
    if args.json:
        sys.stdout.write(json.dumps({"sweep": str(path), "report": to_json(report)}) + "\n")
    else:
        sys.stdout.write(to_markdown(report))
    return 1 if report.failures else 0

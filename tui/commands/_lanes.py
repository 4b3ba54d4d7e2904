"""``ddtune sweep --parallel N [--gpus 0,1] [--gpus-per-server K] [--share-gpu]``: the options and the run of a
parallel sweep (workloads.sweep.lanes), with its signal handling and its lane-tagged printer."""

from __future__ import annotations

from tui.commands._options import count_option


def add_lane_options(parser) -> None:
    parser.add_argument("--parallel", type=count_option("lanes"), default=None, metavar="N",
                        help="run up to N servers at once, each on its own GPU set and port (docs/scale.md)")
    parser.add_argument("--gpus", metavar="LIST", default=None,
                        help="GPUs for --parallel, e.g. 0,1,2,3 (default: every GPU no other process uses; "
                             "required where NVML cannot list GPUs, as with the simulator)")
    parser.add_argument("--gpus-per-server", type=count_option("lanes"), default=None, metavar="K",
                        help="GPUs per server with --parallel (default 1; match the server's --tp-size)")
    parser.add_argument("--share-gpu", action="store_true", default=None,
                        help="let lanes share a GPU (--gpus 0,0, or --parallel beyond the GPUs): their servers "
                             "start one at a time and their throughput interferes; runs are labelled shared-GPU")


def wants_lanes(args, manifest: dict | None = None) -> bool:
    """A parallel sweep: asked for now, or the resumed sweep ran as one."""
    from workloads.sweep import ran_in_lanes

    asked = any(getattr(args, k, None) is not None for k in ("parallel", "gpus", "gpus_per_server", "share_gpu"))
    return asked or ran_in_lanes(manifest)


def lane_settings(args, manifest: dict | None):
    """--parallel/--gpus/--gpus-per-server/--share-gpu, falling back to what the resumed sweep or search
    recorded."""
    from workloads.sweep import LaneSettings

    return LaneSettings.resolve(getattr(args, "parallel", None), getattr(args, "gpus", None),
                                getattr(args, "gpus_per_server", None), manifest,
                                share_gpu=bool(getattr(args, "share_gpu", None)))


def prepare_parallel(args, plan, kind: str):
    """Create or resume the sweep and plan its lanes; (the coroutine function that runs it, its folder)
    for tui.commands._sweep.run_and_report. Bad options raise UsageError before anything starts."""
    import asyncio
    import os
    import signal

    from backends.core import UsageError
    from tui.commands._server import load_config, note
    from tui.commands._sweep_print import LanePrinter
    from workloads.sweep import LaneSweep, SweepStore, check_out_folder, ran_in_lanes, start_sweep

    config = load_config(args)
    store = SweepStore.open(args.out, kind) if args.resume else None
    manifest = store.read() if store is not None else None
    if store is not None and not ran_in_lanes(manifest):
        raise UsageError(f"--resume --out {store.path}: that sweep ran on one server, not in parallel lanes",
                         hint="resume it without --parallel, --gpus and --gpus-per-server")
    settings = lane_settings(args, manifest)
    if store is not None and plan is None:
        plan = store.plan()
    if store is None:
        check_out_folder(args.out)  # refused before lanes are planned
    lanes, notes = asyncio.run(settings.plan(config, note=note))
    if store is None:
        store = start_sweep(plan, config, None, lanes=settings, out=args.out, kind=kind)
    printer = LanePrinter()
    api_key = args.api_key or os.environ.get("DDTUNE_API_KEY") or None
    sweep = LaneSweep(plan, store, lanes, config, api_key=api_key, on_event=printer, keep_server=args.keep_server,
                      notes=tuple(notes))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)  # type: ignore[union-attr]
        try:
            await sweep.run()
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    return main, store.path

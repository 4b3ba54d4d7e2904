"""``ddtune sweep --parallel N [--gpus 0,1] [--gpus-per-server K]``: the options and the run of a
parallel sweep (workloads.sweep.lanes), with its signal handling and its lane-tagged printer."""

from __future__ import annotations

import sys

from tui.commands._options import positive_int


def add_lane_options(parser) -> None:
    parser.add_argument("--parallel", type=positive_int, default=None, metavar="N",
                        help="run up to N servers at once, each on its own GPU set and port (docs/scale.md)")
    parser.add_argument("--gpus", metavar="LIST", default=None,
                        help="GPUs for --parallel, e.g. 0,1,2,3 (default: every GPU no other process uses; "
                             "required where NVML cannot list GPUs, as with the simulator)")
    parser.add_argument("--gpus-per-server", type=positive_int, default=None, metavar="K",
                        help="GPUs per server with --parallel (default 1; match the server's --tp-size)")


def wants_lanes(args, manifest: dict | None = None) -> bool:
    """A parallel sweep: asked for now, or the resumed sweep ran as one."""
    asked = any(getattr(args, k, None) is not None for k in ("parallel", "gpus", "gpus_per_server"))
    return asked or bool(manifest and isinstance(manifest.get("parallel"), dict))


def _settings(args, manifest: dict | None) -> dict:
    """--parallel/--gpus/--gpus-per-server, falling back to what the resumed sweep recorded."""
    from backends.machine.gpuset import parse_gpus

    found = (manifest or {}).get("parallel")
    recorded: dict = found if isinstance(found, dict) else {}
    gpus = parse_gpus(args.gpus) if getattr(args, "gpus", None) is not None else None
    if gpus is None and isinstance(recorded.get("gpus"), list):
        gpus = tuple(str(g) for g in recorded["gpus"])
    per_server = getattr(args, "gpus_per_server", None) or recorded.get("gpus_per_server") or 1
    parallel = getattr(args, "parallel", None) or recorded.get("parallel")
    if parallel is None:
        parallel = max(1, len(gpus) // per_server) if gpus else 1
    return {"parallel": int(parallel), "gpus": list(gpus) if gpus is not None else None,
            "gpus_per_server": int(per_server)}


class LanePrinter:
    """The serial sweep's printer, each lane's lines tagged ``lane N:``."""

    def __init__(self, stream=sys.stderr) -> None:
        from tui.commands._sweep import EventPrinter

        self.stream = stream
        self.lines = EventPrinter(_Tagged(stream))
        self.gpus: dict[int, str] = {}

    def __call__(self, event) -> None:
        from workloads.sweep import events as s

        if isinstance(event, s.LanesStarted):
            for lane in event.lanes:
                self.gpus[lane.index] = lane.visible_devices
                devices = ", ".join(d.describe() for d in lane.devices)
                self._write(f"lane {lane.index}: {devices or 'GPU ' + lane.visible_devices}, port {lane.port}")
            for note in event.notes:
                self._write(f"note: {note}")
        elif isinstance(event, s.LaneEvent):
            self.lines.stream.tag = f"[lane {event.lane} GPU {self.gpus.get(event.lane, '?')}] "
            try:
                self.lines(event.event)
            finally:
                self.lines.stream.tag = ""
        elif isinstance(event, s.LaneMoved):
            self._write(moved_line(event))
        elif isinstance(event, s.LaneClosed):
            self._write(f"lane {event.lane}: {event.what}")
        else:
            self.lines(event)

    def _write(self, text: str) -> None:
        self.stream.write(f"sweep: {text}\n")
        self.stream.flush()


def moved_line(event) -> str:
    """A LaneMoved event, for the user."""
    return (f"lane {event.lane}: port {event.old_port} was taken before its server could bind it ({event.why}); "
            f"the lane moved to port {event.new_port} and starts again there")


class _Tagged:
    """A stream that starts every line with ``tag``."""

    def __init__(self, stream) -> None:
        self.stream, self.tag = stream, ""

    def write(self, text: str) -> int:
        return self.stream.write(self.tag + text if self.tag else text)

    def flush(self) -> None:
        self.stream.flush()


def run_parallel(args, plan, kind: str) -> int:
    """Create or resume the sweep, run its lanes, print the report; 0 when every run succeeded."""
    import asyncio
    import os
    import signal

    from backends.core import UsageError
    from tui.commands._server import load_config, note
    from workloads.runs.provenance import host_provenance
    from workloads.runs.store import new_run_folder
    from workloads.sweep.lanes import LaneSweep, plan_lanes
    from workloads.sweep.plan import SweepStore

    config = load_config(args)
    store = SweepStore.open(args.out, kind) if args.resume else None
    manifest = store.read() if store is not None else None
    if store is not None and not isinstance((manifest or {}).get("parallel"), dict):
        raise UsageError(f"--resume --out {store.path}: that sweep ran on one server, not in parallel lanes",
                         hint="resume it without --parallel, --gpus and --gpus-per-server")
    settings = _settings(args, manifest)
    if store is not None and plan is None:
        plan = store.plan()
    if store is None and args.out:
        new_run_folder(args.out, "sweep.json", "sweep")  # refused before lanes are planned
    lanes, notes = asyncio.run(plan_lanes(config, settings["parallel"], tuple(settings["gpus"])
                                          if settings["gpus"] is not None else None,
                                          settings["gpus_per_server"], note=note))
    if store is None:
        store = SweepStore.create(plan, {"config_source": config.source, "backend": config.backend,
                                         "model": config.model, "host": host_provenance(), "server_before": None,
                                         "parallel": settings}, args.out, kind)
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

    from tui.commands._sweep import run_and_report

    return run_and_report(main, args, kind, store.path)

"""The plain-text lines ``ddtune sweep`` and ``ddtune ab`` write to stderr while they run (the engine
prints nothing): one per event worth a line, each lane's tagged with its lane and GPUs."""

from __future__ import annotations

import sys

import workloads.sweep as ev


class EventPrinter:
    """One line on stderr per sweep event worth a line."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.total = 0
        self.last_phase: tuple[int, str] | None = None

    def _eta(self, eta: float | None) -> str:
        return "" if eta is None else f"  (ETA {eta / 60:.1f} min)" if eta >= 120 else f"  (ETA {eta:.0f} s)"

    def __call__(self, event) -> None:
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
            acc, source = ev.cell_acceptance(c), ev.cell_acceptance_source(c)
            what = f"{c['prompts']} " if c.get("prompts") else ""
            rate = f" rate {c['request_rate']:g}/s" if c.get("request_rate") is not None else ""
            shared = f"; CONTENDED: {c.get('note') or 'other traffic on the server'}" if c.get("contended") else ""
            w(f"    cell {event.cells_done}/{event.cells_total}: {what}ctx {c['context']} c {c['concurrency']}{rate}: "
              f"{tok or 0:.1f} tok/s" + (f", accept {acc:.2f} ({source})" if acc else "") + shared
              + self._eta(event.eta_s))
        elif isinstance(event, ev.EvalFinished):
            verdicts = event.summary
            w(f"    coding eval: pass {verdicts.get('pass', 0)}/{sum(verdicts.values())}")
        elif isinstance(event, ev.LosslessChecked):
            w(f"    {ev.describe_lossless(event.result)}")
        elif isinstance(event, ev.SlotFinished):
            r = event.record
            if r.status != "done":
                w(f"    {r.slot.config} run {r.slot.repeat} FAILED (recorded, sweep goes on): "
                  f"{(r.reason or '').splitlines()[0] if r.reason else ''}")
        elif isinstance(event, ev.SweepFinished):
            w(f"sweep {event.status}: {event.done} run(s) done, {event.failed} failed; folder {event.path}")


class LanePrinter:
    """The serial sweep's printer, each lane's lines tagged ``lane N:``."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.lines = EventPrinter(_Tagged(stream))
        self.gpus: dict[int, str] = {}

    def __call__(self, event) -> None:
        if isinstance(event, ev.LanesStarted):
            for lane in event.lanes:
                self.gpus[lane.index] = lane.visible_devices
                devices = ", ".join(d.describe() for d in lane.devices)
                self._write(f"lane {lane.index}: {devices or 'GPU ' + lane.visible_devices}, port {lane.port}")
            for note in event.notes:
                self._write(f"note: {note}")
        elif isinstance(event, ev.LaneEvent):
            self.lines.stream.tag = f"[lane {event.lane} GPU {self.gpus.get(event.lane, '?')}] "
            try:
                self.lines(event.event)
            finally:
                self.lines.stream.tag = ""
        elif isinstance(event, ev.LaneMoved):
            self._write(moved_line(event))
        elif isinstance(event, ev.LaneClosed):
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

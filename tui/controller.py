"""The console's controller: owns the server manager, the log tail, telemetry and the coding load.

Everything here runs in Textual workers on the app's event loop and talks to the screen only by
posting messages (tui/messages.py). Blocking calls (NVML, --help, /proc) go through threads inside
the engines. The server outlives the console unless the user asks to stop it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from backends.config import ServerConfig
from backends.errors import DdtuneError
from backends.lifecycle import Progress, ServerManager
from backends.logevents import DecodeBatch
from backends.logkind import note as note_line
from backends.logkind import read_lines
from backends.logparse import parse_line
from backends.state import ServerState
from tui import messages as m
from tui.views import KnobRow, ServerView

if TYPE_CHECKING:
    from tui.app import DdtuneApp

LOG_FLUSH_S = 0.25         # log lines reach the screen in batches at most this often (4 Hz)
LOG_BATCH_MAX = 2000       # a burst larger than this keeps only its newest lines
_FRACTION = re.compile(r"(\d+)/(\d+)")
_EFFECTIVE_KEY = {"window": "window_size", "budget": "budget"}


def progress_fraction(detail: str) -> float | None:
    match = _FRACTION.search(detail or "")
    if not match or int(match.group(2)) == 0:
        return None
    return min(int(match.group(1)) / int(match.group(2)), 1.0)


def knob_rows(knobs: dict[str, Any], state: ServerState | None) -> tuple[KnobRow, ...]:
    """Requested versus effective, per knob: verified, mismatch, or unknown (the server did not say)."""
    rows = []
    effective = state.effective if state and state.phase == "ready" else {}
    mismatched = " ".join(state.mismatches) if state else ""
    for name, value in knobs.items():
        requested = "none" if value is None else str(value)
        key = _EFFECTIVE_KEY.get(name)
        if key is None or key not in effective or (effective.get(key) is None and name == "budget"):
            rows.append(KnobRow(name, requested, None, None))
            continue
        said = effective.get(key)
        shown = "None" if said is None else str(said)
        rows.append(KnobRow(name, requested, shown, f"{name}:" not in mismatched))
    return tuple(rows)


class ConsoleController:
    """What the app drives: start or re-attach, apply knobs, load on/off, and leave or stop on quit."""

    def __init__(self, config: ServerConfig, simulated: bool, load_concurrency: int = 8,
                 load_max_tokens: int = 1024, autostart_load: bool = False) -> None:
        self.autostart_load = autostart_load
        self.config = config
        self.simulated = simulated
        self.manager = self._new_manager(config)
        self.state: ServerState | None = None
        self.progress: Progress | None = None
        self.note: str | None = None
        self.version: str | None = None
        self.failure: str | None = None  # why the last start/restart was refused before launching
        self.load_concurrency = load_concurrency
        self.load_max_tokens = load_max_tokens
        self.load_engine = None
        self.app: DdtuneApp | None = None
        self._last_view: ServerView | None = None
        self._progress_at = 0.0
        self._log_buffer: deque[str] = deque(maxlen=LOG_BATCH_MAX)
        self._log_read = 0      # lines read since the last flush; more than the buffer holds were skipped

    def _new_manager(self, config: ServerConfig) -> ServerManager:
        return ServerManager(config, on_progress=self._on_progress, on_note=self._on_note)

    # --- wiring -----------------------------------------------------------------------------
    def attach(self, app: "DdtuneApp") -> None:
        self.app = app
        self._publish()
        app.run_worker(self._bring_up(restart=False), group="server", exclusive=True, exit_on_error=False)
        app.run_worker(self._telemetry(), group="telemetry", exit_on_error=False)
        app.set_interval(LOG_FLUSH_S, self._flush_log)
        app.set_interval(1.0, self._publish)

    def post(self, message) -> None:
        if self.app is not None:
            self.app.main.post_message(message)

    # --- server -----------------------------------------------------------------------------
    async def _bring_up(self, restart: bool) -> None:
        self.failure = None
        what = "restarting" if restart else "starting or re-attaching"
        self.post(m.LogLinesRead([note_line(f"--- ddtune: {what} {self.config.backend} server on port "
                                            f"{self.config.port} ---")]))
        try:
            old = self.manager.current()
            task = self.manager.restart() if restart else self.manager.up()
            self._follow_log_soon(old.pid if restart and old else None)
            self.state = await task
        except DdtuneError as exc:
            self.note = None
            self.state = None
            self.failure = exc.message + (f" ({exc.hint})" if exc.hint else "")
            self.post(m.LogLinesRead([note_line(f"ddtune: {exc}")]))
            self._publish()
            return
        if self.state.phase == "ready":
            self.version = await self._server_version()
            if self.autostart_load and self.load_engine is None:
                self.autostart_load = False
                self.toggle_load()
        self._publish()

    def _follow_log_soon(self, old_pid: int | None) -> None:
        if self.app is not None:
            self.app.run_worker(self._tail_log(old_pid), group="log", exclusive=True, exit_on_error=False)

    async def _tail_log(self, old_pid: int | None = None) -> None:
        """Follow the current server's log file from its start; restarted when the server changes."""
        if not self.manager.backend.has_logs():
            return
        while True:  # the state file names the new process's log once it is launched
            state = self.manager.current()
            if state is not None and state.log_path and state.pid != old_pid:
                break
            await asyncio.sleep(0.1)
        async for line in self.manager.backend.log_lines(state, from_start=True):
            self._log_buffer.append(line)  # O(1); the oldest fall off past LOG_BATCH_MAX
            self._log_read += 1
            if "Decode batch" in line:
                self._decode_line(line)

    def _decode_line(self, line: str) -> None:
        event = parse_line(line)
        if isinstance(event, DecodeBatch) and event.is_lead:
            self.post(m.DecodeStatsRead(time.monotonic(), event.gen_throughput, event.accept_len))

    def _flush_log(self) -> None:
        if not self._log_buffer:
            return
        lines = read_lines(self._log_buffer)
        skipped, self._log_read = self._log_read - len(lines), 0
        self._log_buffer.clear()
        if skipped > 0:
            lines.insert(0, note_line(f"--- ddtune: {skipped} log lines skipped (burst) ---"))
        self.post(m.LogLinesRead(lines))

    async def _server_version(self) -> str | None:
        from backends.lifecycle import fetch_server_info

        if self.state is None:
            return None
        info = await fetch_server_info(self.state.url, self.manager.backend.api_key(self.state)) or {}
        return str(info["version"]) if info.get("version") else None

    def _on_progress(self, progress: Progress) -> None:
        self.progress = progress
        self._progress_at = time.monotonic()
        self._publish()

    def _on_note(self, text: str) -> None:
        self.note = text
        self.post(m.LogLinesRead([note_line(f"--- ddtune: {text}")]))
        self._publish()

    def view(self, fatal: str | None = None) -> ServerView:
        state, progress = self.state, self.progress
        phase = state.phase if state and state.phase in ("ready", "failed") else (progress.phase if progress else "idle")
        detail = progress.detail if progress else ""
        if phase == "ready" and not (state and state.phase == "ready"):
            phase, detail = "warmup", "ready; verifying the knobs"  # the manager has not returned yet
        if self.failure:
            phase, fatal = "failed", fatal or self.failure
        if phase == "failed" and not fatal and not state:  # the tracker knows before the manager returns
            fatal = (getattr(self.manager.tracker, "error", None) or "").split("\n")[0] or None
        if state and state.phase == "failed":
            fatal = fatal or (state.reason or "").split("\n")[0]
        uptime = time.time() - state.ready_at if state and state.ready_at else None
        if uptime is not None and uptime >= 60:
            uptime = uptime // 60 * 60  # whole minutes once past the first: the panel redraws once a minute
        pid = (state.pid if state else None) or (progress.pid if progress else None)
        return ServerView(
            backend=self.config.backend, simulated=self.simulated, pid=pid, url=self.config.base_url,
            version=self.version, uptime_s=uptime, phase=phase,
            detail="" if phase in ("ready", "failed") else detail,
            progress=None if phase == "ready" else progress_fraction(detail),
            elapsed_s=self._elapsed(phase), eta_s=progress.eta_s if progress else None,
            knobs=knob_rows(self.config.knobs, state), fatal=fatal,
            note=None if phase == "ready" else self.note,
        )

    def _elapsed(self, phase: str) -> float | None:
        """Seconds since the start began, ticking between the manager's reports (whole seconds)."""
        if self.progress is None:
            return None
        extra = 0.0 if phase in ("ready", "failed") else time.monotonic() - self._progress_at
        return float(int(self.progress.elapsed_s + extra))

    def _publish(self, fatal: str | None = None) -> None:
        view = self.view(fatal)
        if view != self._last_view:  # most ticks change nothing visible: send nothing then
            self._last_view = view
            self.post(m.ServerChanged(view))

    def restart_with(self, knobs: dict[str, Any]) -> None:
        """Apply new knob values: the manager validates them against the server before stopping it."""
        self.config = self.config.with_knobs(knobs)
        self.manager = self._new_manager(self.config)
        self.state, self.progress, self.version = None, None, None
        self.post(m.ConfigMarked(time.monotonic(), ", ".join(f"{k}={v}" for k, v in knobs.items())))
        if self.app is not None:
            self.app.run_worker(self._bring_up(restart=True), group="server", exclusive=True, exit_on_error=False)

    def resync(self) -> None:
        """Pick up whatever server the state file now names (after a sweep restarted it)."""
        state = self.manager.current()
        if state is not None and state.phase == "ready":
            self.config = self.config.with_knobs(dict(state.knobs))
            self.manager = self._new_manager(self.config)
            self.state, self.progress, self.failure = state, None, None
            self.post(m.ConfigMarked(time.monotonic(), "sweep ended"))
            self._publish()
            self._follow_log_soon(None)

    # --- telemetry --------------------------------------------------------------------------
    async def _telemetry(self) -> None:
        from backends.telemetry import TelemetryStream
        from tui.adapters import gpu_view

        def server_ref():
            state = self.state or self.manager.current()
            return (state.pid, state.pgid) if state and state.pid else None

        stream = TelemetryStream(server=server_ref, interval=1.0)
        try:
            async for sample in stream:
                self.post(m.GpuSampled(gpu_view(sample, stream.history)))
        finally:
            stream.close()

    # --- coding load ------------------------------------------------------------------------
    @property
    def load_running(self) -> bool:
        return self.load_engine is not None

    def toggle_load(self) -> bool:
        if self.load_engine is not None:
            self.load_engine.stop("stopped")
            return False
        if self.app is not None:
            self.app.run_worker(self._run_load(), group="load", exclusive=True, exit_on_error=False)
        return True

    async def _run_load(self) -> None:
        from workloads.client import StreamingClient
        from workloads.load import LoadEngine, LoadStopped, RequestFinished, StatsUpdated
        from workloads.problems import load_problems

        def on_event(event) -> None:
            if isinstance(event, StatsUpdated):
                s = event.stats
                self.post(m.LoadWindowUpdated(time.monotonic(), s.window_1s.tokens_per_s,
                                              s.window_10s.acceptance, s.in_flight))
            elif isinstance(event, RequestFinished):
                r = event.result
                self.post(m.RequestFinished({
                    "problem": event.problem, "tokens": r.output_tokens, "tok_s": r.decode_tok_s or 0.0,
                    "accept_len": r.acceptance, "ttft_s": r.ttft_s,
                    "verdict": event.grade.verdict if event.grade else ("error" if not r.ok else "-")}))
            elif isinstance(event, LoadStopped):
                self.post(m.LoadStateChanged(False, event.error or event.reason))

        key = self.manager.backend.api_key(self.state)
        async with StreamingClient(self.config.base_url, api_key=key, concurrency=self.load_concurrency) as client:
            engine = LoadEngine(client, tuple(load_problems()), concurrency=self.load_concurrency,
                                max_tokens=self.load_max_tokens, on_event=on_event)
            self.load_engine = engine
            self.post(m.LoadStateChanged(True, f"{self.load_concurrency} streams"))
            try:
                await engine.run()
            finally:
                self.load_engine = None

    # --- leaving ----------------------------------------------------------------------------
    async def detach(self, stop_server: bool) -> None:
        if self.load_engine is not None:
            self.load_engine.stop("stopped")
        if stop_server:
            await self.manager.down()

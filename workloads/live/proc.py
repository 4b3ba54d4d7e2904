"""The live coding load from the parent's side: a ``python -m workloads.live.worker`` process.

The console's UI process only renders, so the load's client, windows and grading run in a worker
process (workloads/live/worker.py holds the protocol). ``LoadProcess`` starts it in its own process
group, hands it the settings over stdin (the API key never appears in argv or the environment),
and turns its stdout into typed, frozen events::

    load = LoadProcess()
    await load.start(url, api_key, concurrency=32, max_tokens=1024)
    async for event in load.events():       # one reader; ends after LoadStopped
        ...                                 # LoadStarted, StatsUpdated, RequestDone, LoadPaused, LoadResumed
    load.pause("restart"); load.resume()    # around a server restart: in-flight requests come back "cancelled"
    await load.stop("stopped")

The events are the engine's own records (workloads/live/events.py), rebuilt from the wire as the
engine made them (workloads/live/wire.py derives the format from them and checks every field read),
so the figures are the in-process engine's. ``stop`` asks, closes
stdin, waits ``grace_s``, then signals only what backends/launch/ownership.py proves is ours (the recorded
pid, its group and its create time; the graders as its descendants), never anything by name.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections import deque
from dataclasses import replace
from collections.abc import AsyncIterator

import psutil

from backends.core import ENV_KEY
from backends.server import SAME_START_S, NotOurs, Owned, StopReport, owned, signal_owned, stop_owned
from workloads.live.events import (DecodeRead, LoadCommand, LoadPaused, LoadProcEvent, LoadResumed, LoadStopped,
                                   PauseLoad, ResumeLoad, Settings, StatsUpdated, StopLoad, empty_stats)
from workloads.live.wire import decode_event, encode

# ``-P`` (3.11+): the worker imports ddtune from the interpreter's own sys.path (its site-packages
# and the PYTHONPATH it inherits), as this process did; without it ``-m`` would put the working
# directory first, and a user's ./workloads or ./backends folder would run instead of ddtune.
WORKER = ("-P", "-m", "workloads.live.worker")


def worker_env(api_key: str | None) -> dict[str, str]:
    """The parent's environment minus anything holding the key (nothing added: the worker finds
    ddtune's packages where this process found them, see WORKER)."""
    return {k: v for k, v in os.environ.items() if k != ENV_KEY and not (api_key and api_key in v)}


def _kill_proven(found: Owned, deadline: float) -> None:
    """SIGKILL, by pidfd after a create-time check (ownership.signal_owned), each process of
    ``found`` still running, until none is left or the deadline passes. Zombies count as gone."""
    while True:
        left = {}
        for pid, created in found.pids.items():
            try:
                proc = psutil.Process(pid)
                if abs(proc.create_time() - created) < SAME_START_S and proc.status() != psutil.STATUS_ZOMBIE:
                    left[pid] = created
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() >= deadline:
            return
        signal_owned(replace(found, leader_alive=False, pids=left), signal.SIGKILL)
        time.sleep(0.05)


class LoadProcess:
    """One load worker process. Not reusable: start it once, read its events, stop it."""

    def __init__(self, python: str = sys.executable, tick_s: float = 1.0, window_s: float = 5.0) -> None:
        self.python = python
        self.tick_s = tick_s
        self.window_s = window_s  # the rolling window of the rates (and the closed windows' length)
        self.pid: int | None = None
        self.create_time: float | None = None
        self.concurrency = 0
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._proc: asyncio.subprocess.Process | None = None
        self._queue: asyncio.Queue[LoadProcEvent] = asyncio.Queue()
        self._readers: list[asyncio.Task] = []
        self._stopped = False  # a LoadStopped has been queued

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def wait(self) -> int:
        """The worker's exit status, once it has exited."""
        if self._proc is None:
            raise RuntimeError("this LoadProcess was never started")
        return await self._proc.wait()

    async def start(self, url: str, api_key: str | None, concurrency: int, max_tokens: int,
                    problems: list[str] | tuple[str, ...] | None = None, record: bool = False,
                    prompts: str | None = None) -> None:
        """Spawn the worker and hand it the settings; everything after arrives as events (a bad
        setting or an unreachable server as LoadStopped)."""
        if self._proc is not None:
            raise RuntimeError("this LoadProcess was already started")
        self.concurrency = concurrency
        self._proc = await asyncio.create_subprocess_exec(
            self.python, *WORKER, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
            env=worker_env(api_key), limit=1 << 20)
        self.pid = self._proc.pid
        try:  # our unreaped child: the pid cannot have been reused yet
            self.create_time = psutil.Process(self.pid).create_time()
        except psutil.NoSuchProcess:
            self.create_time = None
        self._send(Settings(url, api_key, concurrency, max_tokens, tuple(problems) if problems else None,
                            self.tick_s, record, self.window_s, prompts))
        self._readers = [asyncio.ensure_future(self._read_events()), asyncio.ensure_future(self._read_stderr())]

    async def events(self) -> AsyncIterator[LoadProcEvent]:
        """Every event, in order, ending after LoadStopped (made up here if the worker died silently)."""
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, LoadStopped):
                return

    def pause(self, why: str = "restart") -> None:
        """Stop sending new requests and cancel those in flight (RequestDone ``cancelled``, then
        LoadPaused); the recorded run of this configuration ends ``interrupted (why)``."""
        self._send(PauseLoad(why))

    def resume(self) -> None:
        self._send(ResumeLoad())

    def decode(self, t: float, accept_len: float | None, running_req: int) -> None:
        """One of the server's decode lines, from the session's one log tail: the windows' acceptance
        where neither the requests nor the counters carry it (``t``: monotonic, one clock for both)."""
        if accept_len is not None and running_req > 0:
            self._send(DecodeRead(t, accept_len, running_req))

    async def stop(self, reason: str = "stopped", grace_s: float = 5.0, term_s: float = 3.0) -> StopReport | None:
        """Ask the worker to stop (it grades the answers already in), close its stdin, wait
        ``grace_s``; then SIGTERM (it drops the grading left), and SIGKILL after ``term_s``, only
        the processes the recorded pid and create time prove are ours. None if it exited in time."""
        proc = self._proc
        if proc is None:
            return None
        self._send(StopLoad(reason))
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        report = None
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), grace_s)
        except TimeoutError:
            report = await asyncio.to_thread(self._signal_ours, term_s)
        await proc.wait()
        await asyncio.gather(*self._readers, return_exceptions=True)
        return report

    # ---- internals ------------------------------------------------------------------------------
    def _send(self, record: Settings | LoadCommand) -> None:
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None or stdin.is_closing():
            return
        try:
            stdin.write(encode(record).encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker is gone; its end arrives as LoadStopped

    def _signal_ours(self, term_s: float) -> StopReport | None:
        """Blocking. The group and the worker's descendants (the graders, each in a session of its
        own), then any of those descendants still alive once the worker is gone."""
        if self.pid is None or self.create_time is None:
            return None
        try:
            # proof=False: this process spawned the worker and holds it (no record read from disk), and
            # the sandboxed graders it forks run with no environment, so they carry no launch token
            found = owned(self.pid, self.pid, self.create_time, proof=False)
        except NotOurs:
            return None
        report = stop_owned(found, term_timeout=term_s, kill_timeout=term_s)
        _kill_proven(found, time.monotonic() + term_s)
        return report

    async def _read_events(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        last = empty_stats(self.concurrency, self.window_s)
        while True:
            try:
                line = await self._proc.stdout.readline()
            except (ValueError, ConnectionError):
                line = b""
            if not line:
                break
            try:
                event = decode_event(line)
            except ValueError as exc:
                self.stderr_tail.append(f"unreadable event from the load worker: {exc}: {line[:200]!r}")
                continue
            if isinstance(event, (StatsUpdated, LoadPaused, LoadResumed, LoadStopped)):
                last = event.stats
            if not self._stopped:
                self._stopped = isinstance(event, LoadStopped)
                self._queue.put_nowait(event)
        code = await self._proc.wait()
        if not self._stopped:
            self._stopped = True
            how = f"signal {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
                else f"status {code}"
            said = " | ".join(self.stderr_tail)
            self._queue.put_nowait(LoadStopped("worker-exited", f"the load worker exited with {how}"
                                               + (f": {said}" if said else ""), last))

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while True:
            try:
                line = await self._proc.stderr.readline()
            except ValueError:  # an overlong line: it was dropped
                continue
            except ConnectionError:
                return
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self.stderr_tail.append(text)

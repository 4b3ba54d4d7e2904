"""The one reader of a managed server's log: parses each line once and fans the result out.

``LogFollower.follow(state)`` tails that launch's log from its first byte (a new launch switches
files). Every line is parsed once by ``backends.logs.parse`` and classified once by
``backends.logs.kind``; from that single pass it

- keeps the facts readiness and verification need for this launch (``LogFacts``: the pid in
  ``Started server process [PID]``, the latest line holding each marker the knob table verifies
  from (the draft-runner and DDTree lines, the ``server_args=`` dump), fatal lines, the tail),
- hands each parsed event to the session's ``Phases``, which moves the startup tracker by it,
- hands the lead rank's ``Decode batch`` figures to ``on_decode`` as they come,
- and batches the lines themselves for ``on_lines`` (at most every ``flush_s``; a burst larger than
  ``batch_max`` keeps its newest lines and says how many it skipped).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from backends.drivers.base import Driver
from backends.logs.events import DecodeBatch, Fatal, ServerStarted
from backends.logs.llama_events import LlamaListening
from backends.logs.kind import LogLine, classify
from backends.logs.parse import parse_line
from backends.record.state import ServerState
from backends.server.phases import Phases

TAIL_LINES = 20
FLUSH_S = 0.25        # log lines reach readers in batches at most this often (4 Hz)
BATCH_MAX = 2000      # a burst larger than this keeps only its newest lines


def _fatal_rank(event: Fatal) -> int:
    return 0 if event.kind == "oom" else (2 if event.generic else 1)


@dataclass
class LogFacts:
    """What one launch's log has said so far that the lifecycle acts on."""

    started_pid: int | None = None      # the latest "Started server process [PID]"
    marked: dict[str, LogLine] = field(default_factory=dict)  # marker -> the latest line holding it, parsed
    fatals: list[Fatal] = field(default_factory=list)
    fatal_at: float | None = None       # monotonic time of the first non-generic fatal line
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES * 5))

    def fatal_reason(self) -> str:
        """The fatal lines, most telling first (an OOM beats "scheduler hit an exception")."""
        seen: list[str] = []
        for event in sorted(self.fatals, key=_fatal_rank):
            text = f"{event.kind}: {event.message}"
            if text not in seen:
                seen.append(text)
        return "fatal log line: " + " | ".join(seen[:4])

    def last_lines(self, n: int = TAIL_LINES) -> list[str]:
        return list(self.tail)[-n:]


class LogFollower:
    """Follows the log of the launch it was last pointed at; see the module docstring."""

    def __init__(self, phases: Phases, on_lines: Callable[[tuple[LogLine, ...], int], None] | None = None,
                 on_decode: Callable[[float, DecodeBatch], None] | None = None, flush_s: float = FLUSH_S,
                 batch_max: int = BATCH_MAX) -> None:
        self.phases = phases
        self.on_lines = on_lines
        self.on_decode = on_decode
        self.flush_s = flush_s
        self.facts = LogFacts()
        self.log_path: str | None = None
        self._task: asyncio.Task | None = None
        self._pending: deque[LogLine] = deque(maxlen=batch_max)
        self._read = 0
        self._flusher: asyncio.Task | None = None
        self._started = asyncio.Event()  # set once this launch's "Started server process" line is read

    def follow(self, state: ServerState, driver: Driver) -> LogFacts:
        """Start reading this launch's log (through ``driver``) from its start; a no-op when it is the
        one being read. The lines marked are those its config's knob table verifies from."""
        if not driver.has_logs() or not state.log_path:
            return self.facts
        if state.log_path == self.log_path and self._task is not None and not self._task.done():
            return self.facts
        self.stop()
        driver.api_key(state)  # the launch's key, remembered: the lines read mask it (linesplitter)
        self.log_path = state.log_path
        self.facts = LogFacts()
        self._started = asyncio.Event()
        markers = driver.config.knob_table.log_markers()
        self._task = asyncio.create_task(self._run(driver.log_lines(state, from_start=True), markers, self.facts))
        if self.on_lines is not None:
            self._flusher = asyncio.create_task(self._flush_loop())
        return self.facts

    def stop(self) -> None:
        for task in (self._task, self._flusher):
            if task is not None:
                task.cancel()
        self._task = self._flusher = None
        self.flush()

    async def read_past_start(self, timeout_s: float = 2.0) -> None:
        """Wait (at most ``timeout_s``) until the reader has read this launch's ``Started server
        process`` line: the server prints it after loading and capture, so the lines of those phases
        have moved the tracker by then. For a launch first seen already ready (another ddtune's
        restart, noticed late): its phases show before its ready, as for our own starts."""
        if self._task is None or self._task.done() or self.facts.started_pid is not None:
            return
        try:
            await asyncio.wait_for(self._started.wait(), timeout_s)
        except TimeoutError:
            pass

    async def settle(self) -> None:
        """Let the reader take what is already in the file (after the server exited)."""
        await asyncio.sleep(0.5)

    async def _run(self, texts: AsyncIterator[str], markers: tuple[str, ...], facts: LogFacts) -> None:
        phases = self.phases
        async for text in texts:
            facts.tail.append(text)
            event = parse_line(text)
            line = None
            for marker in markers:
                if marker in text:
                    facts.marked[marker] = line = line or LogLine(text, classify(text, event), event)
            if self.on_lines is not None:
                self._pending.append(line or LogLine(text, classify(text, event), event))
                self._read += 1
            if event is None:
                continue
            now = time.monotonic()
            if isinstance(event, DecodeBatch):
                if event.is_lead and self.on_decode is not None:
                    self.on_decode(now, event)
                continue
            if isinstance(event, ServerStarted):
                facts.started_pid = event.pid
                if facts is self.facts:
                    self._started.set()
            elif isinstance(event, LlamaListening) and facts is self.facts:
                self._started.set()  # llama.cpp names no pid: its listening line ends the start's lines
            elif isinstance(event, Fatal) and (phases.judging or facts.fatal_at is not None):
                facts.fatals.append(event)
                if not event.generic and facts.fatal_at is None:
                    facts.fatal_at = now
            phases.log_event(event)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            self.flush()

    def flush(self) -> None:
        """Hand the lines read since the last flush to ``on_lines`` (one call per batch)."""
        if not self._pending or self.on_lines is None:
            return
        lines = tuple(self._pending)
        skipped, self._read = self._read - len(lines), 0
        self._pending.clear()
        self.on_lines(lines, max(skipped, 0))

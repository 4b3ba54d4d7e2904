"""The live load's one window engine: rolling rates and closed windows of streamed tokens. Pure.

The console (through its load worker) and headless ``ddtune load`` read their figures here, so a
number on screen and in ``ddtune load --json`` means the same thing:

- **rolling rates** ``rate(now, span)``: tokens streamed in ``(now - span, now]`` divided by
  ``span``, and the acceptance of the requests that finished in it (their tokens / their verify
  steps; never the server's lifetime average). Where no finished request carried spec fields (chat
  before sglang 0.5.19), the acceptance comes from the server's counters read at the window's edges
  (``add_counters``, to the nearest reading: Δtokens / Δverify calls, backends/logs/acceptance.py)
  and, without counters either (a server started without ``--enable-metrics``), from the server
  log's ``Decode batch`` lines read in the window (``add_decode``: their ``accept len`` weighted by
  ``#running-req``, the verify calls each line stands for); ``acceptance_source`` says which
  (``request``, ``counters`` or ``log``). The console plots the
  ``roll_s`` rate (5 s by default) with the 1 s rate faint behind it.
- **closed windows** ``close(now)``: time tiled into ``roll_s`` windows from the start (and again
  from each resume, so no window straddles a server restart); each one is kept once it has ended.
  They are ``ddtune load --json``'s ``windows`` and the samples the A/B strip averages.

Token counts are exact when the server sends cumulative counts (``usage.completion_tokens`` per
chunk, or ``/generate``'s ``meta_info``); a token the client could only count by chunks (its last
resort: under speculation one chunk brings several tokens) marks every rate and window it falls in
``approx``. Memory stays bounded: streamed tokens merge into ``MERGE_S`` slots and go once no rate
or unclosed window can need them; ``closed`` keeps the latest ``keep`` windows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from backends.logs import SpecCounters, counter_acceptance, log_acceptance

MERGE_S = 0.01  # tokens this close together share one entry: at most 100 entries per second


@dataclass(frozen=True)
class WindowStats:
    """Rates over one rolling window ending at the time it was read."""

    window_s: float
    tokens_per_s: float
    acceptance: float | None  # accepted tokens per verify step over requests finished in the window
    finished: int
    approx: bool = False      # some of its tokens were counted by chunks, not from the server's counts
    measured_s: float = 0.0   # the time it covers: less than window_s within window_s of the start or a resume
    acceptance_source: str | None = None  # "request", "counters" or "log" (backends/logs/acceptance.py); None: none


@dataclass(frozen=True)
class Window:
    """One closed window: ``(t_s - span_s, t_s]`` in seconds since the load started."""

    index: int                # 0, 1, ... in the order they closed (across resumes)
    t_s: float
    span_s: float
    tok_s: float
    acceptance: float | None
    finished: int
    approx: bool = False
    first: bool = False       # the first window after the start or a resume (it holds the ramp-up)
    acceptance_source: str | None = None

    def to_json(self) -> dict:
        doc = {"t_s": round(self.t_s, 3), "tok_s": round(self.tok_s, 3),
               "acceptance": None if self.acceptance is None else round(self.acceptance, 4),
               "acceptance_source": self.acceptance_source}
        if self.approx:
            doc["approx"] = True
        return doc


class LiveWindows:
    """Feed it times from one monotonic clock: ``add_tokens`` as they stream, ``add_finished`` as
    requests end; read ``rate`` at any time and ``close`` once per tick."""

    def __init__(self, start: float, roll_s: float = 5.0, keep: int = 4320) -> None:
        if not roll_s > 0:
            raise ValueError(f"the rolling window must be longer than 0 s, got {roll_s!r}")
        self.start = start
        self.roll_s = float(roll_s)
        self.horizon_s = 2 * self.roll_s + 2.0   # how far back a rate may be read
        self.closed: deque[Window] = deque(maxlen=keep)
        self._tokens: deque[list] = deque()     # [t, tokens, approx]
        self._finished: deque[tuple[float, int, int | None]] = deque()
        self._counters: deque[tuple[float, SpecCounters]] = deque()
        self._decode: deque[tuple[float, float | None, int]] = deque()  # (t, accept len, #running-req)
        self._tile_from: float | None = start   # None while paused
        self._since = start                      # the start or the latest resume: rates reach back no further
        self._first = True
        self._index = 0
        self._latest = start
        self.approx_seen = False                 # any token so far was counted by chunks

    # ---- input -------------------------------------------------------------------------------
    def add_tokens(self, t: float, n: int, exact: bool = True) -> None:
        if n <= 0:
            return
        approx = not exact
        self.approx_seen = self.approx_seen or approx
        last = self._tokens[-1] if self._tokens else None
        if last is not None and t - last[0] < MERGE_S and last[2] == approx:
            last[1] += n
        else:
            self._tokens.append([t, n, approx])
        self._advance(t)

    def add_finished(self, t: float, tokens: int, verify_ct: int | None) -> None:
        self._finished.append((t, tokens, verify_ct))
        self._advance(t)

    def add_counters(self, t: float, counters: SpecCounters | None) -> None:
        """The server's counters read at ``t`` (the load reads them once per tick)."""
        if counters is not None:
            self._counters.append((t, counters))
            self._advance(t)

    def add_decode(self, t: float, accept_len: float | None, running_req: int) -> None:
        """One lead-rank, non-idle ``Decode batch`` line of the server, read at ``t``."""
        if accept_len is not None and running_req > 0:
            self._decode.append((t, accept_len, running_req))
            self._advance(t)

    def pause(self) -> None:
        """The load paused (a server restart): the window under way is dropped, none closes."""
        self._tile_from = None

    def resume(self, t: float) -> None:
        """Windows tile again from ``t``; the first one holds the ramp-up and says so."""
        self._tile_from = t
        self._since = t
        self._first = True

    # ---- output ------------------------------------------------------------------------------
    def rate(self, now: float, span: float) -> WindowStats:
        """Tokens per second over ``(now - span, now]`` and the acceptance of the requests that
        finished in it; ``now`` may lie in the past by up to ``horizon_s - span``. Within ``span``
        of the start or a resume the rate is over the time since then, not diluted by the time before."""
        self._advance(now)
        lo = max(now - span, self._since)
        if now - lo <= 1e-6:
            return WindowStats(span, 0.0, None, 0, False, 0.0)
        tokens, approx = self._tokens_in(lo, now)
        done, acceptance, source = self._acceptance_in(lo, now)
        return WindowStats(span, tokens / (now - lo), acceptance, done, approx, now - lo, source)

    def close(self, now: float) -> tuple[Window, ...]:
        """Close every window that has ended by ``now``; returns the newly closed ones."""
        self._advance(now)
        new = []
        while self._tile_from is not None and self._tile_from + self.roll_s <= now:
            lo = self._tile_from
            hi = lo + self.roll_s
            tokens, approx = self._tokens_in(lo, hi)
            done, acceptance, source = self._acceptance_in(lo, hi)
            window = Window(self._index, hi - self.start, self.roll_s, tokens / self.roll_s, acceptance, done,
                            approx, self._first, source)
            self._index += 1
            self._first = False
            self._tile_from = hi
            self.closed.append(window)
            new.append(window)
        self._trim()
        return tuple(new)

    # ---- internals ---------------------------------------------------------------------------
    def _advance(self, t: float) -> None:
        if t > self._latest:
            self._latest = t
            self._trim()

    def _trim(self) -> None:
        edge = self._latest - self.horizon_s
        if self._tile_from is not None:
            edge = min(edge, self._tile_from)  # never drop what a window still to close needs
        while self._tokens and self._tokens[0][0] <= edge:
            self._tokens.popleft()
        while self._finished and self._finished[0][0] <= edge:
            self._finished.popleft()
        while len(self._counters) > 1 and self._counters[1][0] <= edge:  # keep the reading at the edge
            self._counters.popleft()
        while self._decode and self._decode[0][0] <= edge:
            self._decode.popleft()

    def _tokens_in(self, lo: float, hi: float) -> tuple[int, bool]:
        total, approx = 0, False
        for t, n, rough in reversed(self._tokens):
            if t <= lo:
                break
            if t <= hi:
                total += n
                approx = approx or rough
        return total, approx

    def _acceptance_in(self, lo: float, hi: float) -> tuple[int, float | None, str | None]:
        """Requests finished in ``(lo, hi]``, and the acceptance there with its source: the requests'
        own, else the counters' delta between the readings nearest the edges, else the decode lines'."""
        done, acceptance = self._finished_in(lo, hi)
        if acceptance is not None:
            return done, acceptance, "request"
        before = next((c for t, c in reversed(self._counters) if t <= lo), None)
        if before is None:
            before = next((c for t, c in self._counters if lo < t <= hi), None)
        after = next((c for t, c in reversed(self._counters) if t <= hi), None)
        acceptance = counter_acceptance(before, after) if after is not before else None
        if acceptance is not None:
            return done, acceptance, "counters"
        acceptance = log_acceptance(self._decode, lo, hi)
        return done, acceptance, "log" if acceptance is not None else None

    def _finished_in(self, lo: float, hi: float) -> tuple[int, float | None]:
        done, tokens, verify = 0, 0, 0
        for t, n, v in reversed(self._finished):
            if t <= lo:
                break
            if t <= hi:
                done += 1
                if v:
                    tokens += n
                    verify += v
        return done, tokens / verify if verify else None


def server_rate(lines: list[tuple[float, float]], lo: float, hi: float) -> float | None:
    """The server's own throughput over ``(lo, hi]`` from its ``Decode batch`` lines, each
    ``(t, gen_throughput)`` in time order: a line's figure covers the time since the line before,
    so the rate is their time-weighted mean over the overlap. None when the lines do not cover
    ``(lo, hi]``. Sets the client's windows beside the server's line (tests, benchmarks)."""
    covered = weighted = 0.0
    for (t0, _), (t1, rate) in zip(lines, lines[1:], strict=False):
        overlap = min(t1, hi) - max(t0, lo)
        if overlap > 0:
            covered += overlap
            weighted += rate * overlap
    if covered < (hi - lo) * 0.999:
        return None
    return weighted / covered

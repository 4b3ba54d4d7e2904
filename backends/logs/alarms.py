"""Guards no other tool has: a speculative server whose drafter silently stopped helping.

A wrong draft model, a window that broke drafting or a NaN shows as acceptance near 1.0 (one token
per verify step) while speculation is on, and then tok/s falls below the no-speculation baseline.
``AcceptanceWatch`` raises ``acceptance_collapse`` when the recent acceptance stays at or below
``THRESHOLD`` for ``WINDOW_S`` seconds of the server's own decode lines, or for ``WINDOW_REQUESTS``
requests in a row, and clears it at the first sample above. Pure: times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

THRESHOLD = 1.10      # tokens per verify step: a working drafter stays well above
WINDOW_S = 20.0       # ... for this long (decode lines: log time)
WINDOW_REQUESTS = 50  # ... or this many requests in a row (per-request acceptance)


@dataclass(frozen=True)
class Alarm:
    kind: str
    message: str
    since: float | None       # when the collapse began (the clock of the samples)
    value: float | None       # the last acceptance seen

    def to_json(self) -> dict:
        return {"kind": self.kind, "message": self.message, "since": self.since, "value": self.value}


class AcceptanceWatch:
    def __init__(self, threshold: float = THRESHOLD, window_s: float = WINDOW_S,
                 window_requests: int = WINDOW_REQUESTS) -> None:
        self.threshold, self.window_s, self.window_requests = threshold, window_s, window_requests
        self.low_since: float | None = None   # first low decode sample after the last good one
        self.low_requests = 0
        self.last: float | None = None
        self.alarm: Alarm | None = None

    def decode(self, t: float, accept_len: float | None) -> Alarm | None:
        """One lead-rank ``Decode batch`` figure at time ``t`` (seconds); the alarm now, if any."""
        if self._low(accept_len):
            self.low_since = t if self.low_since is None else self.low_since
            if t - self.low_since >= self.window_s:
                self._raise(f"{self.window_s:.0f} s of decode lines")
        return self.alarm

    def request(self, accept_len: float | None) -> Alarm | None:
        """One finished request's mean acceptance (None: the server is not speculative)."""
        if self._low(accept_len):
            self.low_requests += 1
            if self.low_requests >= self.window_requests:
                self._raise(f"{self.low_requests} requests in a row")
        return self.alarm

    def _low(self, accept_len: float | None) -> bool:
        """True for a sample at or below the threshold; a good one clears everything."""
        if accept_len is None:
            return False
        self.last = accept_len
        if accept_len > self.threshold:
            self.low_since, self.low_requests, self.alarm = None, 0, None
            return False
        return True

    def _raise(self, over: str) -> None:
        if self.alarm is None:
            self.alarm = Alarm(
                "acceptance_collapse",
                f"acceptance {self.last:.2f} <= {self.threshold:.2f} for {over} while speculative: the "
                f"drafter is not helping (wrong draft model, a window that broke drafting, NaNs?)",
                self.low_since, self.last)


def alarms_from_log(lines, speculative: bool) -> list[Alarm]:
    """What a server's recent log says (``status --json``): the lead rank's decode lines, on log time."""
    from backends.logs.events import DecodeBatch
    from backends.logs.parse import parse_line

    if not speculative:
        return []
    watch = AcceptanceWatch()
    for line in lines:
        event = parse_line(line)
        if isinstance(event, DecodeBatch) and event.is_lead and not event.idle and event.time_s is not None:
            watch.decode(event.time_s, event.accept_len)
    return [watch.alarm] if watch.alarm else []

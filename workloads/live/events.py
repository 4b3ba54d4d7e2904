"""What the live load says and is told, as typed records: the engine's events (in process, and on
the worker's stdout), the worker's settings and the parent's commands (on its stdin).

One set of dataclasses for both sides of the pipe: workloads/live/wire.py derives the wire format
from their fields, so the worker (workloads/live/worker.py) and its parent (workloads/live/proc.py)
cannot drift apart. A request is one concept, ``RequestDone``: answered (graded or not), failed, or
cut off by a pause (verdict ``cancelled``), whether the engine runs here or in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workloads.live.windows import Window, WindowStats


@dataclass(frozen=True)
class LoadStats:
    elapsed_s: float
    concurrency: int
    in_flight: int
    finished: int
    errors: int
    output_tokens: int
    window_1s: WindowStats
    window_roll: WindowStats          # the rolling window the plots and status lines show (5 s by default)
    verdicts: dict[str, int] = field(default_factory=dict)
    cancelled: int = 0   # requests cut off by pause(): neither finished nor errors
    paused: bool = False
    last_window: Window | None = None  # the latest closed roll_s window
    # the run's acceptance so far, as tokens over verify calls: the requests' own (source "request"),
    # else the server's counters since the load's first reading ("counters"), else its Decode batch lines'
    # accept len x #running-req over #running-req ("log"); None: none of them
    accept_tokens: float = 0.0
    accept_verify: float = 0.0
    accept_source: str | None = None

    @property
    def acceptance(self) -> float | None:
        return self.accept_tokens / self.accept_verify if self.accept_verify > 0 else None


def empty_stats(concurrency: int, roll_s: float = 5.0) -> LoadStats:
    return LoadStats(0.0, concurrency, 0, 0, 0, 0, WindowStats(1.0, 0.0, None, 0), WindowStats(roll_s, 0.0, None, 0))


# ---- events: the engine's, and the worker's (the same records) ------------------------------------
@dataclass(frozen=True)
class LoadStarted:
    """The worker runs (the in-process engine has no such event: its caller started it)."""

    pid: int
    concurrency: int
    problems: tuple[str, ...]    # the ids of the prompts it cycles through (the first thousand)
    run_dir: str | None = None   # where this configuration's run is recorded (record=True)
    prompts: str = "coding"      # the prompt source


@dataclass(frozen=True)
class RequestDone:
    """One request the load finished, failed or cancelled (a pause), with its grade's verdict:
    pass/fail/error/timeout/no_code/truncated, ``error`` (the request failed: ``ok`` is False),
    ``cancelled`` (cut off by a pause), or ``-`` (ungraded). ``detail``: the grade's detail or the
    request's error."""

    problem: str
    ok: bool                    # the request itself completed (graded or not); False: failed or cancelled
    tokens: int                 # output tokens (streamed so far, for a cancelled one)
    tok_s: float                # this stream's decode rate (0.0 when unknown)
    accept_len: float | None
    ttft_s: float | None
    e2e_s: float | None
    verdict: str
    detail: str | None

    def row(self) -> dict:
        """The console's request-table row."""
        return {"problem": self.problem, "tokens": self.tokens, "tok_s": self.tok_s,
                "accept_len": self.accept_len, "ttft_s": self.ttft_s, "verdict": self.verdict,
                "detail": self.detail}  # why it failed (the grader's line or the error): Enter shows it


@dataclass(frozen=True)
class StatsUpdated:
    stats: LoadStats


@dataclass(frozen=True)
class LoadPaused:
    """Every request that was in flight has been cancelled (and reported); none is sent until resume()."""

    cancelled: int
    stats: LoadStats


@dataclass(frozen=True)
class LoadResumed:
    stats: LoadStats


@dataclass(frozen=True)
class LoadStopped:
    reason: str  # "duration", "stopped", "interrupted", "server-unreachable", "bad-settings", "worker-exited"
    error: str | None
    stats: LoadStats


LoadEvent = StatsUpdated | RequestDone | LoadPaused | LoadResumed | LoadStopped   # the engine's
LoadProcEvent = LoadStarted | LoadEvent                                           # the worker's


# ---- the parent's side: the settings (stdin's first line), then commands ---------------------------
@dataclass(frozen=True)
class Settings:
    url: str
    api_key: str | None
    concurrency: int
    max_tokens: int
    problems: tuple[str, ...] | None = None  # record ids; None: all of the source's
    tick_s: float = 1.0
    record: bool = False   # write runs (kind load) under runs/, one per server configuration
    window_s: float = 5.0  # the rolling window of the rates and the length of the closed windows
    prompts: str | None = None  # the prompt source (workloads/prompts); None: the coding problems

    def __post_init__(self) -> None:
        """ValueError naming the field, whichever side built it."""
        if not self.url:
            raise ValueError("settings: 'url' must be a non-empty string")
        for name in ("concurrency", "max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"settings: '{name}' must be a whole number >= 1")
        if self.prompts is not None and not self.prompts.strip():
            raise ValueError("settings: 'prompts' must be a prompt source (coding, story, humaneval, a file) or null")
        if not self.tick_s > 0:
            raise ValueError("settings: 'tick_s' must be a number of seconds above 0")
        if not 0 < self.window_s < 3600:
            raise ValueError("settings: 'window_s' must be a number of seconds above 0 and below 3600")


@dataclass(frozen=True)
class PauseLoad:
    why: str = "restart"  # what the recorded run of this configuration was cut short by


@dataclass(frozen=True)
class ResumeLoad:
    pass


@dataclass(frozen=True)
class StopLoad:
    reason: str = "stopped"


@dataclass(frozen=True)
class DecodeRead:
    """A ``Decode batch`` line the console's log tail read (``t`` monotonic): acceptance's last source."""

    t: float
    accept_len: float
    running_req: int


LoadCommand = PauseLoad | ResumeLoad | StopLoad | DecodeRead

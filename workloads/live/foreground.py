"""The live load in the foreground, without the console: ``ddtune load``, as one call:
``run_load(LoadSpec(...), on_event) -> LoadOutcome``.

The same LoadEngine as the console's load worker (workloads/live/worker.py), in this process and
recorded as one run (kind ``load``) under runs/: its provenance, every raw response, and at the end
the summary ``ddtune load --json`` prints. The caller prints what it wants of the events: the
engine's ticks (``StatsUpdated``) and finished requests (``RequestDone``); ``note`` is told, before
anything is sent, of the records its prompt source could not read. How the load ended is the outcome's.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, fields

from backends.core import ServerError
from workloads.bench.bench_case import SetSkipped
from workloads.client.stream import StreamingClient
from workloads.live.events import LoadEvent, LoadStopped, RequestDone, StatsUpdated
from workloads.live.load import LoadEngine
from workloads.live.record import load_summary
from workloads.live.work import LoadWork, load_work
from workloads.runs.provenance import host_provenance, server_provenance
from workloads.runs.store import RunStore


@dataclass(frozen=True)
class LoadSpec:
    url: str
    api_key: str | None
    concurrency: int
    max_tokens: int = 2048
    duration_s: float | None = None    # None: until SIGINT or SIGTERM
    prompts: str | None = None         # the source (default: the coding problems)
    problems: tuple[str, ...] | None = None  # the ids to cycle through (default: all)
    window_s: float = 5.0
    log_path: str | None = None        # the server's log (acceptance's last source)


@dataclass(frozen=True)
class LoadOutcome:
    """The run's summary: what run.json's ``summary`` holds and ``--json`` prints (``to_json``, the
    same keys in the same order as ever)."""

    reason: str                       # "duration", "interrupted", "server-unreachable", ...
    error: str | None
    elapsed_s: float
    finished: int
    errors: int
    output_tokens: int
    output_tok_s: float | None
    verdicts: dict[str, int]
    cancelled: int
    acceptance: dict | None           # {"total", "source", and "tokens"/"verify_calls" or "weight"}
    run_dir: str
    prompts: str                      # the prompt source
    token_count: str                  # "exact", or "approx" (counted by chunks)
    window_s: float
    windows: tuple[dict, ...]         # the closed windows

    @property
    def approx(self) -> bool:
        return self.token_count == "approx"

    def to_json(self) -> dict:
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc["windows"] = list(self.windows)
        return doc

    def raise_if_failed(self) -> None:
        """A load the server stopped (unreachable, or it failed) is a failed run: ServerError."""
        if self.error:
            raise ServerError(f"the load stopped: {self.error}", hint="is the server still up? 'ddtune status'")


LoadCliEvent = StatsUpdated | RequestDone  # a foreground load never pauses; its end is the outcome


def run_load(spec: LoadSpec, on_event: Callable[[LoadCliEvent], object] | None = None,
             note: Callable[[str], object] | None = None) -> LoadOutcome:
    """The load the spec asks for, in this process (blocking). A bad source or unknown ids raise
    UsageError before anything is sent; the records the source could not read are told to ``note``
    (lines of text, as ``ddtune bench`` says them)."""
    emit = on_event or (lambda event: None)

    def engine_event(event: LoadEvent) -> None:
        if isinstance(event, (StatsUpdated, RequestDone)):
            emit(event)
    work = load_work(spec.prompts, spec.problems)
    if work.prompts.skipped and note is not None:
        note(SetSkipped(work.name, len(work.prompts.records), tuple(work.prompts.skipped)).lines())
    return asyncio.run(load_foreground(spec.url, spec.api_key, concurrency=spec.concurrency,
                                          max_tokens=spec.max_tokens, duration_s=spec.duration_s,
                                          problems=list(spec.problems or ()) or None, window_s=spec.window_s,
                                          log_path=spec.log_path, on_event=engine_event, work=work))


async def load_foreground(url: str, api_key: str | None, *, concurrency: int, max_tokens: int,
                   duration_s: float | None = None, problems: list[str] | None = None, window_s: float = 5.0,
                   log_path: str | None = None, on_event: Callable[[LoadEvent], object] | None = None,
                   prompts: str | None = None, work: LoadWork | None = None) -> LoadOutcome:
    """Keep ``concurrency`` prompts of ``prompts`` (default: the coding problems) in flight (those
    ``problems`` names, default all) for ``duration_s`` (None: until SIGINT or SIGTERM, which stop it
    cleanly: what is answered is graded and the run is written); the run's summary. A bad source or
    unknown ids raise UsageError before anything is sent. ``work``: the set already read (load_work)."""
    work = work or load_work(prompts, problems)
    async with StreamingClient(url, api_key=api_key, concurrency=concurrency) as client:
        server = await server_provenance(client)
        if server["server_info"] is None:
            await client.get_json("/v1/models")
        store = RunStore.create("load", {"plan": {"concurrency": concurrency, "duration_s": duration_s,
                                                  "max_tokens": max_tokens, "prompts": work.name,
                                                  "problems": list(problems) if problems else None,
                                                  "multi_turn": "live reply" if work.prompts.multi_turn else None},
                                         "prompt_sets": [work.prompts.describe()],
                                         "server": server, "host": host_provenance(), "started_at": time.time()})
        engine = LoadEngine(client, work.records, problems=work.problems, prompts=work.name,
                            concurrency=concurrency, max_tokens=max_tokens,
                            on_event=on_event or (lambda event: None), store=store, roll_s=window_s,
                            log_path=log_path)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):  # stop cleanly: finish grading, write the summary
            loop.add_signal_handler(sig, engine.stop, "interrupted")
        stopped: list[LoadStopped] = []
        engine.add_listener(lambda e: stopped.append(e) if isinstance(e, LoadStopped) else None)
        try:
            stats = await engine.run(duration_s)
        except BaseException as exc:
            store.end_run(exc)  # interrupted or failed, as bench and eval record it
            raise
        store.close()
        stop = stopped[-1]
        summary = {**load_summary(stats, stop.reason, stop.error, stats.elapsed_s, str(store.path)),
                   "prompts": work.name,
                   "token_count": "approx" if engine.windows.approx_seen else "exact",
                   "window_s": window_s, "windows": [w.to_json() for w in engine.windows.closed]}
        outcome = LoadOutcome(**{**summary, "windows": tuple(summary["windows"])})
        store.update_run(status="failed" if stop.error else "done", finished_at=time.time(), summary=outcome.to_json())
        return outcome

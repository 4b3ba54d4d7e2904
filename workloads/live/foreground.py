"""The live load in the foreground, without the console: ``ddtune load``.

The same LoadEngine as the console's load worker (workloads/live/worker.py), in this process and
recorded as one run (kind ``load``) under runs/: its provenance, every raw response, and at the end
the summary ``ddtune load --json`` prints. The caller prints what it wants of the events.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

from workloads.client.stream import StreamingClient
from workloads.live.events import LoadEvent, LoadStopped
from workloads.live.load import LoadEngine
from workloads.live.record import load_summary
from workloads.live.work import LoadWork, load_work
from workloads.runs.provenance import host_provenance, server_provenance
from workloads.runs.store import RunStore


async def run_load(url: str, api_key: str | None, *, concurrency: int, max_tokens: int,
                   duration_s: float | None = None, problems: list[str] | None = None, window_s: float = 5.0,
                   log_path: str | None = None, on_event: Callable[[LoadEvent], None] | None = None,
                   prompts: str | None = None, work: LoadWork | None = None) -> dict:
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
        store.update_run(status="failed" if stop.error else "done", finished_at=time.time(), summary=summary)
        return summary

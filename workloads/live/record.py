"""The console's live load, recorded as runs (kind ``load``), one per server configuration.

A run's provenance (knobs, version, launch command from ``/server_info``) holds for one server, so
the load worker opens a run when the load starts or resumes after a restart, and closes it when the
load pauses for a restart or stops. Responses are appended as they finish (``RunStore``), so a run
survives a closed terminal; ``summary`` holds this run's share of the engine's counters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from workloads.live.events import LoadStats
from workloads.runs.store import RunStore


@dataclass
class _Segment:
    store: RunStore
    at: LoadStats | None      # the engine's counters when this run opened
    started: float


def load_summary(stats: LoadStats, reason: str, error: str | None, elapsed_s: float, run_dir: str,
                 since: LoadStats | None = None) -> dict:
    """A load run's summary (what ``ddtune load --json`` prints and a run's summary holds): the
    engine's counters, less those at ``since`` when the run is one segment of a longer load."""
    def count(name: str) -> int:
        return getattr(stats, name) - (getattr(since, name) if since is not None else 0)

    tokens = count("output_tokens")
    verdicts = {k: v - (since.verdicts.get(k, 0) if since else 0) for k, v in stats.verdicts.items()}
    acceptance = None
    if stats.accept_source is not None and (since is None or since.accept_source in (None, stats.accept_source)):
        spec_tokens, verify = count("accept_tokens"), count("accept_verify")
        if verify > 0 and stats.accept_source == "log":  # decode lines: accept len weighted by #running-req
            acceptance = {"total": spec_tokens / verify, "source": "log", "weight": verify}
        elif verify > 0:
            acceptance = {"total": spec_tokens / verify, "source": stats.accept_source, "tokens": spec_tokens,
                          "verify_calls": verify}
    return {"reason": reason, "error": error, "elapsed_s": elapsed_s, "finished": count("finished"),
            "errors": count("errors"), "output_tokens": tokens,
            "output_tok_s": tokens / elapsed_s if elapsed_s > 0 else None,
            "verdicts": {k: v for k, v in verdicts.items() if v}, "cancelled": count("cancelled"),
            "acceptance": acceptance, "run_dir": run_dir}


class LoadRecorder:
    def __init__(self, client, plan: dict, prompt_set: dict | None = None) -> None:
        self.client = client
        self.plan = plan
        self.prompt_set = prompt_set  # the set's description (PromptSet.describe), recorded in each run
        self._segment: _Segment | None = None

    @property
    def store(self) -> RunStore | None:
        return self._segment.store if self._segment else None

    async def open(self, stats: LoadStats | None) -> RunStore:
        from workloads.runs.provenance import host_provenance, server_provenance

        server = await server_provenance(self.client)
        store = RunStore.create("load", {"plan": self.plan, "server": server, "host": host_provenance(),
                                         "prompt_sets": [self.prompt_set] if self.prompt_set else [],
                                         "started_at": time.time(), "source": "console"})
        self._segment = _Segment(store, stats, time.monotonic())
        return store

    def close(self, stats: LoadStats, reason: str, error: str | None = None, interrupted: bool = False) -> None:
        """End this configuration's run: ``failed`` with an error, ``interrupted`` when it was cut short
        (a pause for a restart or a stop, ``interrupted=True``; a signal; the console gone), else ``done``."""
        segment, self._segment = self._segment, None
        if segment is None:
            return
        summary = load_summary(stats, reason, error, time.monotonic() - segment.started,
                               str(segment.store.path), since=segment.at)
        summary["prompts"] = self.plan.get("prompts")
        cut = interrupted or reason in ("parent-gone", "terminated", "interrupted")
        status = "failed" if error else ("interrupted" if cut else "done")
        segment.store.update_run(status=status, finished_at=time.time(), summary=summary)
        segment.store.close()

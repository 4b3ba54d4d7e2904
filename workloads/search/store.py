"""A search's folder on disk, and the per-wave tok/s samples read back from a measured slot.

    search.json      the space, target, options, start, status and attempts (replaced atomically)
    rounds.jsonl     one line per finished round: its plan and what each configuration gave
                     (samples, restarted, failure), appended and fsynced
    round-NN/        the round's sweep folder (workloads/sweep/plan.py): sweep.json, slots.jsonl and
                     one bench run per configuration measured in the round
    summary.json     the result (also what --json prints), written when the search ends

Nothing is lost on a crash: a round already in rounds.jsonl is replayed, not measured again, and a
round cut short resumes through its sweep folder (slots already done are kept).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from backends.core import read_json
from backends.core import DdtuneError, UsageError
from backends.core import bounded
from backends.core import runs_dir
from backends.core import append_text, check_folder, write_atomic
from workloads.runs.checks import MAX_SECONDS, MAX_TIME, MAX_TOK_S, PLAUSIBLE
from workloads.runs.checks import response as check_response
from workloads.runs.store import JsonManifest, kept_filter, read_jsonl, run_folder
from workloads.runs.attempts import written_by_other

SCHEMA = "ddtune.search/1"
KIND = "search"
_HINT = "give the folder a search wrote (its --out), or start a new search"


class SearchStore(JsonManifest):
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.manifest = self.path / "search.json"
        self.rounds_file = self.path / "rounds.jsonl"
        self.summary_file = self.path / "summary.json"

    @classmethod
    def create(cls, meta: dict, out: str | Path | None = None) -> SearchStore:
        path = run_folder(out, "search.json", KIND, KIND)
        store = cls(path)
        store.write({"schema": SCHEMA, "kind": KIND, "id": path.name, "status": "running",
                     "started_at": time.time(), "finished_at": None, **meta})
        return store

    @classmethod
    def open(cls, path: str | Path | None) -> SearchStore:
        """An existing search: ``path``, or the latest under runs/ when None."""
        if path is None:
            found = sorted(p for p in runs_dir().glob(f"*-{KIND}") if (p / "search.json").is_file())
            if not found:
                raise UsageError(f"--resume: no search to resume under {runs_dir()}",
                                 hint="give its folder with --out DIR, or start a new search")
            path = found[-1]
        path = Path(path).expanduser()
        check_folder(path)
        if not (path / "search.json").is_file():
            raise UsageError(f"--resume: {path} holds no search (no search.json)", hint=_HINT)
        store = cls(path)
        pid = written_by_other(store.read())
        if pid is not None:
            raise UsageError(f"--resume: {path} is still being written by process {pid}",
                             hint="wait for that search to finish, or stop it first")
        return store

    def read(self) -> dict:
        doc = read_json(self.manifest, UsageError, hint=_HINT)
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise UsageError(f"{self.manifest}: not a search ddtune wrote", hint=_HINT)
        return doc

    def rounds(self) -> list[dict]:
        """The finished rounds, in order (a torn last line from a crash is skipped)."""
        return read_jsonl(self.rounds_file)

    def append_round(self, record: dict) -> None:
        append_text(self.rounds_file, json.dumps(record) + "\n")

    def round_dir(self, number: int) -> Path:
        return self.path / f"round-{number:02d}"

    def write_summary(self, summary: dict) -> None:
        write_atomic(self.summary_file, json.dumps(summary, indent=2) + "\n")


def wave_samples(bench_dir: str | Path, concurrency: int) -> list[float]:
    """Per-wave tok/s of one bench run: its kept responses in start order, cut into waves of
    ``concurrency`` (a wave's requests leave together, so they share a start); each wave gives its
    output tokens over its wall time (first start to last end, prefill included)."""
    path = Path(bench_dir)
    kept = kept_filter(path)
    responses = [r for r in read_jsonl(path / "responses.jsonl") if r.get("kind") == "bench"
                 and (kept is None or kept(r)) and _timed(r)]
    responses.sort(key=lambda r: r["started_at"])
    samples = []
    for i in range(0, len(responses) - concurrency + 1, concurrency):
        wave = responses[i:i + concurrency]
        start = min(r["started_at"] for r in wave)
        end = max(r["started_at"] + r["e2e_s"] for r in wave)
        tokens = sum(int(r.get("output_tokens") or 0) for r in wave if r.get("ok", True))
        if end > start and 0 <= (rate := tokens / (end - start)) <= MAX_TOK_S:
            samples.append(rate)
    return samples


def _timed(record: dict) -> bool:
    """A response whose start, duration and token count are plausible (an edited line's 1e400 or
    NaN is left out, as a torn one is)."""
    try:
        check_response("", record)
        bounded(record.get("started_at"), 0, MAX_TIME, "started_at")
        bounded(record.get("e2e_s"), 0, MAX_SECONDS, "e2e_s")
        bounded(record.get("output_tokens") or 0, 0, PLAUSIBLE["max_tokens"], "output_tokens")
    except (ValueError, DdtuneError):
        return False
    return True

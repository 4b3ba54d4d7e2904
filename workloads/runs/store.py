"""The results store: ``state_dir()/runs/<timestamp>-<kind>/`` with run.json, cells.jsonl (bench),
results.jsonl (eval) and responses.jsonl.

run.json is replaced atomically (write to a temporary file, fsync, rename); the JSONL files are
appended one line per record and fsynced per finished cell or graded problem, so a crash keeps every
finished result. Every write goes through backends.core.writes: never through a link, never in a
folder another user rules (a run folder may be any ``--out``). A torn last line (a crash mid-write)
is ignored on reading and cut off before a ``--resume`` appends. Each writing process is an attempt
(workloads/runs/attempts.py) whose id tags every record, so readers keep only the responses of the
attempt whose result was kept. Schema: docs/results-schema.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from backends.core import MAX_LINE, Note, loads, read_json, warn
from backends.core import read_jsonl as read_jsonl_file
from backends.core import DdtuneError, UsageError
from backends.core import shown
from backends.core import runs_dir
from backends.core import append_text, check_folder, make_folder, open_append, write_atomic
from workloads.runs.attempts import abandoned_note, begin_attempt, status_of, written_by_other

SCHEMA = "ddtune.run/1"
_HINT = "give a run folder ddtune wrote (see docs/results-schema.md), or run without --resume"


def read_jsonl(path: Path, note: Note | None = warn) -> list[dict]:
    """The JSON objects of one of a run's JSON-lines files ([] when there is none), streamed through
    the one door (backends.core.datafile: a regular file within the size limits, else a UsageError
    naming it). A torn or non-object line is skipped, as a crash can leave one; a line over the
    length limit is skipped and ``note`` is told."""
    if not os.path.lexists(path):
        return []
    found = read_jsonl_file(path, UsageError, hint=_HINT)
    if note is not None and (said := found.note()) is not None:
        note(said)
    return [value for _, value in found.records if isinstance(value, dict)]


def _heal_tail(path: Path) -> None:
    """Before appending to a file a killed writer left: cut off its torn last line, so the next
    record starts a line of its own (glued to the fragment it would be unreadable). A complete last
    record that only lacks its newline gets one instead, and so does a last line longer than any
    record ddtune reads (MAX_LINE): readers skip it, but its bytes are kept."""
    try:
        fd = open_append(path, create=False, read=True)  # a planted link or FIFO is refused, never opened
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb+") as fh:
        end = fh.seek(0, os.SEEK_END)
        if end == 0:
            return
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return
        start, pos = None, end
        while pos > max(0, end - MAX_LINE - 1):
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            newline = fh.read(step).rfind(b"\n")
            if newline >= 0:
                start = pos + newline + 1
                break
        start = 0 if start is None and pos == 0 else start
        complete = start is None  # over MAX_LINE: kept as a line of its own
        if start is not None:
            fh.seek(start)
            try:
                complete = isinstance(loads(fh.read().decode("utf-8")), dict)
            except ValueError:
                complete = False
        if complete:
            fh.seek(end)
            fh.write(b"\n")
        else:
            fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())


def mark_interrupted_runs(root: Path) -> list[Path]:
    """Mark ``interrupted`` every run under ``root`` still ``running`` whose writer is gone; returns them.

    Called when a run starts or resumes (with the folder that holds it), so a killed command never
    leaves a run that says ``running`` forever. Looks at root/*/run.json, sweep manifests
    (root/*/sweep.json) and the runs in those sweeps' slots: never deeper, as root may be any folder."""
    sweeps = list(root.glob("*/sweep.json"))
    marked = []
    for path in [*root.glob("*/run.json"), *sweeps, *(p for s in sweeps for p in s.parent.glob("*/*/run.json"))]:
        try:
            doc = read_json(path, UsageError)
        except DdtuneError:  # unreadable, or not a file at all: not a run this can mark
            continue
        if isinstance(doc, dict) and doc.get("status") == "running" and status_of(doc) == "interrupted":
            doc.update(status="interrupted", error=abandoned_note(doc))
            write_atomic(path, json.dumps(doc, indent=2) + "\n")
            marked.append(path.parent)
    return marked


def kept_filter(run_dir: Path) -> Callable[[dict], bool] | None:
    """Which records of ``run_dir/responses.jsonl`` belong to a kept result; None when run_dir holds
    no run.json (a file on its own: nothing says what was kept).

    A bench cell (or an eval problem) that an attempt left unfinished is run again by the next
    attempt; only the attempt whose cell (or result) line was written counts. Responses and results
    without an ``attempt`` (older runs) match each other as one attempt. Load responses are all kept."""
    run_file = run_dir / "run.json"
    if not run_file.is_file():
        return None
    run = read_json(run_file, UsageError,
                    hint="without run.json the answers of a killed attempt cannot be told from the kept ones")
    cell_file, result_file = run_dir / "cells.jsonl", run_dir / "results.jsonl"
    # what a reader of those files says about them (report, a resume) it says itself: no second note here
    cells = {(attempt_of(c, cell_file), _key(c, "context"), _key(c, "concurrency"))
             for c in read_jsonl(cell_file, None)}
    results = {(attempt_of(r, result_file), _key(r, "problem")) for r in read_jsonl(result_file, None)}
    per_problem = isinstance(run, dict) and "attempts" in run  # older eval runs kept no results.jsonl
    responses = run_dir / "responses.jsonl"

    def kept(record: dict) -> bool:
        kind = record.get("kind")
        if kind == "bench":
            return (attempt_of(record, responses), _key(record, "context"), _key(record, "concurrency")) in cells
        if kind == "eval" and per_problem:
            return (attempt_of(record, responses), _key(record, "problem")) in results
        return True

    return kept


def attempt_of(record: dict, where: Path | str) -> int | None:
    """A record's ``attempt``: the id of the attempt that wrote it (an integer), or None in a record
    of an older ddtune. Anything else is a UsageError naming the file and the field."""
    attempt = record.get("attempt")
    if attempt is None or (isinstance(attempt, int) and not isinstance(attempt, bool)):
        return attempt
    raise UsageError(f"{where}: \"attempt\": expected an attempt id (an integer), got {shown(attempt, in_json=True)}",
                     hint="the file was edited or is not one ddtune wrote: fix or remove that line's \"attempt\"")


def _key(record: dict, name: str) -> Any:
    """A field used in a set key: JSON arrays and objects are unhashable, and no such value matches."""
    value = record.get(name)
    return value if not isinstance(value, (list, dict)) else repr(value)


def new_run_folder(out: str | Path, manifest: str, what: str) -> Path:
    """``--out DIR`` of a new sweep or search, checked before anything is planned or started: refused
    (UsageError, nothing changed) when DIR already records one (``manifest`` in it), is a file, or is
    in a folder another user rules (backends.core.writes)."""
    path = Path(out).expanduser()
    if (path / manifest).exists():
        raise UsageError(f"--out {path}: a {what} is already recorded there",
                         hint=f"continue it with --resume --out {path}, or pick a new folder")
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {path}: a file, not a folder",
                         hint=f"give a folder for the {what} (created when missing), or leave --out out")
    check_folder(path)
    return path


def stamped_folder(kind: str, root: Path | None = None) -> Path:
    """A new folder ``<UTC time>-<kind>`` under ``root`` (default runs/), created exclusively: two
    runs started in the same second get ``<time>.2-<kind>``, never each other's folder."""
    root = make_folder(root) if root else runs_dir()  # checked: below it, nobody else can swap a name
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path, n = root / f"{stamp}-{kind}", 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1
            path = root / f"{stamp}.{n}-{kind}"


def run_folder(out: str | Path | None, manifest: str, kind: str, what: str) -> Path:
    """A new sweep's or search's folder: ``--out DIR`` checked and created, else a stamped
    ``<time>-<kind>`` one. ``what``: the word for it in a refusal ("sweep", "search")."""
    if not out:
        return stamped_folder(kind)
    return make_folder(new_run_folder(out, manifest, what))


class JsonManifest:
    """A folder's JSON manifest (sweep.json, search.json), rewritten atomically. Subclasses set
    ``manifest`` and define ``read`` (which checks the document is theirs)."""

    manifest: Path

    def read(self) -> dict:
        raise NotImplementedError

    def write(self, doc: dict) -> None:
        write_atomic(self.manifest, json.dumps(doc, indent=2) + "\n")

    def update(self, **fields: Any) -> dict:
        doc = self.read()
        doc.update(fields)
        self.write(doc)
        return doc


class RunStore:
    """One run's directory. Not thread-safe: write from the event loop thread only."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.run_file = self.path / "run.json"
        self.cells_file = self.path / "cells.jsonl"
        self.results_file = self.path / "results.jsonl"
        self.responses_file = self.path / "responses.jsonl"
        self.attempt: int | None = None  # set by start/resume: tags every record this process writes
        self._responses: TextIO | None = None

    @classmethod
    def create(cls, kind: str, meta: dict, root: Path | None = None) -> RunStore:
        store = cls(stamped_folder(kind, root))
        store.start(kind, meta)
        return store

    @classmethod
    def open_resume(cls, resume: str, kind: str, root: Path | None = None) -> RunStore:
        """The run ``--resume`` names: a run directory, or "latest" for the newest run of ``kind``."""
        path = cls.latest(kind, root) if resume == "latest" else Path(resume).expanduser()
        hint = f"give a runs/<time>-{kind} directory, or run without --resume"
        if path is not None:
            check_folder(path)
        if path is None or not (path / "run.json").is_file():
            where = f"no {kind} run to resume" if path is None else f"{path} is not a run directory (no run.json)"
            raise UsageError(f"--resume: {where}", hint=hint)
        store = cls(path)
        try:
            found = store.read_run().get("kind")
        except (OSError, ValueError, AttributeError) as exc:
            raise UsageError(f"--resume: {store.run_file} cannot be read ({exc})", hint=hint) from None
        if found != kind:
            raise UsageError(f"--resume: {path} is a {found} run, not a {kind} run", hint=hint)
        return store

    @staticmethod
    def latest(kind: str, root: Path | None = None) -> Path | None:
        root = Path(root) if root else runs_dir()
        found = sorted(p for p in root.glob(f"*-{kind}") if (p / "run.json").is_file())
        return found[-1] if found else None

    def start(self, kind: str, meta: dict) -> None:
        """Begin a new run in this (existing) directory, this process as its first attempt."""
        mark_interrupted_runs(self.path.parent)
        run = {"schema": SCHEMA, "kind": kind, "id": self.path.name, **meta}
        self.attempt = begin_attempt(run)
        self.write_run(run)

    def resume(self, **fields) -> dict:
        """Continue this run as a new attempt (``--resume``); refuses a run another live process writes."""
        mark_interrupted_runs(self.path.parent)
        run = self.read_run()
        pid = written_by_other(run)
        if pid is not None:
            raise UsageError(f"--resume: {self.path} is still being written by process {pid}",
                             hint="wait for that command to finish, or stop it first")
        for path in (self.cells_file, self.results_file, self.responses_file):
            _heal_tail(path)
        self.attempt = begin_attempt(run)
        run["resumed_at"] = list(run.get("resumed_at") or []) + [time.time()]
        run.update(fields)
        self.write_run(run)
        return run

    def read_run(self) -> dict:
        return read_json(self.run_file, UsageError, hint=_HINT)

    def write_run(self, run: dict) -> None:
        write_atomic(self.run_file, json.dumps(run, indent=2, sort_keys=False) + "\n")

    def update_run(self, **fields) -> dict:
        run = self.read_run()
        run.update(fields)
        self.write_run(run)
        return run

    def end_run(self, exc: BaseException) -> dict:
        """Close the run on ``exc``: interrupted (resumable) for a Ctrl-C or a cancel, else failed, with
        the error's message. The caller re-raises."""
        self.close()
        interrupted = isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))
        return self.update_run(status="interrupted" if interrupted else "failed",
                               error=str(getattr(exc, "message", exc)) or type(exc).__name__, finished_at=time.time())

    def _tagged(self, record: dict) -> dict:
        return record if self.attempt is None else {**record, "attempt": self.attempt}

    def append_response(self, record: dict) -> None:
        if self._responses is None:
            # kept open across records (one open per run, not per response); close() closes it
            self._responses = os.fdopen(open_append(self.responses_file), "a", encoding="utf-8")
        self._responses.write(json.dumps(self._tagged(record), ensure_ascii=False) + "\n")
        self._responses.flush()

    def _append_durable(self, path: Path, record: dict) -> None:
        """Durable once this returns: responses so far and the record are fsynced."""
        self.sync()
        append_text(path, json.dumps(self._tagged(record)) + "\n")

    def append_cell(self, cell: dict) -> None:
        """A finished bench cell (this attempt's)."""
        self._append_durable(self.cells_file, cell)

    def append_result(self, result: dict) -> None:
        """A graded eval problem (this attempt's): what ``eval --resume`` does not ask again."""
        self._append_durable(self.results_file, result)

    def sync(self) -> None:
        if self._responses is not None:
            self._responses.flush()
            os.fsync(self._responses.fileno())

    def cells(self) -> list[dict]:
        return read_jsonl(self.cells_file)

    def results(self) -> list[dict]:
        return read_jsonl(self.results_file)

    def responses(self) -> list[dict]:
        return read_jsonl(self.responses_file)

    def close(self) -> None:
        if self._responses is not None:
            self.sync()
            self._responses.close()
            self._responses = None


def home_short(path: str | Path) -> str:
    """``path`` for a human to read and paste: under the home folder as ``~/...`` (a shell expands it),
    so a screen, a screenshot or a shared log shows no user's home; elsewhere unchanged."""
    text, home = str(path), str(Path.home())
    return "~" + text[len(home):] if home not in ("", "/") and (text == home or text.startswith(home + "/")) else text

"""The results store: ``state_dir()/runs/<timestamp>-<kind>/`` with run.json, cells.jsonl, responses.jsonl.

run.json is replaced atomically (write to a temporary file, fsync, rename); the JSONL files are
appended one line per record and fsynced per finished cell, so a crash keeps every finished cell.
A torn last line (a crash mid-write) is ignored on reading. Schema: docs/results-schema.md.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from backends.paths import runs_dir

SCHEMA = "ddtune.run/1"


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_jsonl(path: Path) -> list[dict]:
    records: list[dict] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return records
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a torn line from a crash
        if isinstance(value, dict):
            records.append(value)
    return records


class RunStore:
    """One run's directory. Not thread-safe: write from the event loop thread only."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.run_file = self.path / "run.json"
        self.cells_file = self.path / "cells.jsonl"
        self.responses_file = self.path / "responses.jsonl"
        self._responses = None

    @classmethod
    def create(cls, kind: str, meta: dict, root: Path | None = None) -> RunStore:
        root = Path(root) if root else runs_dir()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = root / f"{stamp}-{kind}"
        n = 1
        while True:
            try:
                path.mkdir(parents=True)
                break
            except FileExistsError:
                n += 1
                path = root / f"{stamp}.{n}-{kind}"
        store = cls(path)
        store.write_run({"schema": SCHEMA, "kind": kind, "id": path.name, "status": "running", **meta})
        return store

    @staticmethod
    def latest(kind: str, root: Path | None = None) -> Path | None:
        root = Path(root) if root else runs_dir()
        found = sorted(p for p in root.glob(f"*-{kind}") if (p / "run.json").is_file())
        return found[-1] if found else None

    def read_run(self) -> dict:
        return json.loads(self.run_file.read_text(encoding="utf-8"))

    def write_run(self, run: dict) -> None:
        _atomic_write(self.run_file, json.dumps(run, indent=2, sort_keys=False) + "\n")

    def update_run(self, **fields) -> dict:
        run = self.read_run()
        run.update(fields)
        self.write_run(run)
        return run

    def append_response(self, record: dict) -> None:
        if self._responses is None:
            self._responses = open(self.responses_file, "a", encoding="utf-8")
        self._responses.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._responses.flush()

    def append_cell(self, cell: dict) -> None:
        """Durable once this returns: responses so far and the cell are fsynced."""
        self.sync()
        with open(self.cells_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(cell) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def sync(self) -> None:
        if self._responses is not None:
            self._responses.flush()
            os.fsync(self._responses.fileno())

    def cells(self) -> list[dict]:
        return read_jsonl(self.cells_file)

    def responses(self) -> list[dict]:
        return read_jsonl(self.responses_file)

    def close(self) -> None:
        if self._responses is not None:
            self.sync()
            self._responses.close()
            self._responses = None

"""The record of the server ddtune manages, as a type: ``ServerState`` and its JSON codec.

What ddtune started, so a later ddtune (after SIGHUP, a dropped SSH session, a closed console) can
re-attach, after checking the pid is still that very server. Only the server's owner reads and
writes the files that hold it (``server.json``, ``launch.json``: backends.server.record, guarded by
an import contract); everyone else gets this type from the owner's face (backends.server). A
document that does not decode to a well-typed record raises ValueError naming the first bad field.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from backends.core.apikey import redact_argv
from backends.core.phase import Phase, phase_of
from backends.knobs.verify import KnobCheck, mismatch_sentences


@dataclass(frozen=True)
class ServerState:
    backend: str
    pid: int | None
    pgid: int | None
    host: str
    port: int
    url: str
    config_hash: str
    knobs: dict[str, Any]
    log_path: str | None
    started_at: float
    create_time: float | None = None
    argv: tuple[str, ...] = ()  # as launched (API key and all) when read with launch.json; server.json's is redacted
    phase: Phase = Phase.STARTING
    reason: str | None = None
    effective: dict[str, Any] = field(default_factory=dict)
    checks: tuple[KnobCheck, ...] = ()
    ready_at: float | None = None
    config_source: str | None = None
    unit: str | None = None
    token: str | None = None  # the launch token (launch.json only: never in server.json)
    engine: str | None = None  # the engine and its version as it became ready ("llama.cpp b11549")

    def with_(self, **changes: Any) -> ServerState:
        return replace(self, **changes)

    @property
    def mismatches(self) -> tuple[str, ...]:
        """One sentence per knob the server runs differently from what we asked for."""
        return mismatch_sentences(self.checks)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["token"]
        data["argv"] = list(redact_argv(self.argv))
        data["checks"] = [c.to_json() for c in self.checks]
        data["mismatches"] = list(self.mismatches)  # for readers (and older ddtunes) that only print them
        return data

    @classmethod
    def from_json(cls, data: Any) -> ServerState:
        """Decode a record, checking every field's type; ValueError names the first bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        for name, kinds, required in _SCHEMA:
            if name not in data:
                if required:
                    raise ValueError(f"field '{name}' is missing")
                continue
            value = data[name]
            if not _is(value, kinds):
                raise ValueError(f"field '{name}': expected {_names(kinds)}, got {value!r:.40}")
        known = {f.name for f in fields(cls)} - {"token"}  # a token in server.json is no proof: ignored
        kw = {k: v for k, v in data.items() if k in known}
        kw["argv"] = tuple(kw.get("argv", ()))
        if "phase" in data:
            kw["phase"] = phase_of(data["phase"])
        if "checks" in data:
            kw["checks"] = tuple(_check(i, c) for i, c in enumerate(data["checks"]))
        else:  # written before checks were typed: its mismatch sentences stay mismatches
            kw["checks"] = tuple(KnobCheck.legacy(m) for m in data.get("mismatches", ()))
        return cls(**kw)


def _check(index: int, doc: Any) -> KnobCheck:
    try:
        return KnobCheck.from_json(doc)
    except ValueError as exc:
        raise ValueError(f"field 'checks'[{index}]: {exc}") from None


_NUM = "number"
_PID = "pid"
_SCHEMA: tuple[tuple[str, tuple[Any, ...], bool], ...] = (
    ("backend", (str,), True), ("pid", (_PID, None), True), ("pgid", (_PID, None), True),
    ("host", (str,), True), ("port", (int,), True), ("url", (str,), True), ("config_hash", (str,), True),
    ("knobs", (dict,), True), ("log_path", (str, None), True), ("started_at", (_NUM,), True),
    ("create_time", (_NUM, None), False), ("argv", ("strings",), False), ("phase", (str,), False),
    ("reason", (str, None), False), ("effective", (dict,), False), ("mismatches", ("strings",), False),
    ("checks", (list,), False),
    ("ready_at", (_NUM, None), False), ("config_source", (str, None), False), ("unit", (str, None), False),
    ("engine", (str, None), False),
)


def _is(value: Any, kinds: tuple[Any, ...]) -> bool:
    for kind in kinds:
        if kind is None and value is None:
            return True
        if kind == _NUM and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return True
        if kind == _PID and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return True
        if kind == "strings" and isinstance(value, list) and all(isinstance(x, str) for x in value):
            return True
        if isinstance(kind, type) and isinstance(value, kind) and not isinstance(value, bool):
            return True
    return False


def _names(kinds: tuple[Any, ...]) -> str:
    words = {str: "a string", int: "an integer", dict: "an object", list: "a list", None: "null",
             _NUM: "a number", "strings": "a list of strings", _PID: "a positive integer"}
    return " or ".join(words[k] for k in kinds)

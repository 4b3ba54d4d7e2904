"""Config verification: what we asked for versus what the server says it runs. Pure.

Where the server says it is declared per knob (``verify`` in its declaration, strongest first):
``field=value`` on the latest startup log line holding a marker (the draft-window line
``Initialized DFLASH draft runner ...``, the DDTree worker line, the ``server_args=`` dump), or a
key of ``/server_info``. A log line is read through the event the log parser made of it
(``DraftRunner.window_size``, ``DDTreeWorker.tree_budget``, ``ServerArgs``): only a field no event
holds (on a line a user's declaration marks) is looked up in the line's text. The result is one
typed ``KnobCheck`` per setting: verified, mismatch, unverified (the server did not say) or default
(not requested; the server picked). The sentence a user reads (``window: requested 2048, server
says None (draft runner line)``) is derived from a check, never stored in its place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from backends.knobs.plan import SHIPPED, KnobTable, KnobValue
from backends.knobs.spec import KnobSpec, VerifySource
from backends.logs.kind import LogLine
from backends.logs.parse import parse_line

# every DFlash server is checked for these, requested or not (the draft runner line reports the
# first three); compact_cache is derived from the window, the rest are knobs of the table
BASE_KEYS = ("window_size", "compact_cache", "block_size", "budget")
STATUSES = ("verified", "mismatch", "unverified", "default")
Status = Literal["verified", "mismatch", "unverified", "default"]
_SCALARS = (int, float, str, bool, type(None))


@dataclass(frozen=True)
class KnobCheck:
    """One setting: what we asked for, what the server says (and where it said it), and the verdict.

    ``note`` only carries a sentence from a server.json written before checks were typed."""

    name: str
    requested: Any
    effective: Any
    source: str | None
    status: Status
    note: str | None = None

    @property
    def sentence(self) -> str:
        """The one line a user reads, e.g. ``window: requested 2048, server says None (draft runner line)``."""
        if self.note is not None:
            return self.note
        where = f" ({self.source})" if self.source else ""
        if self.status == "mismatch":
            return f"{self.name}: requested {_show(self.requested)}, server says {_show(self.effective)}{where}"
        if self.status == "verified":
            return f"{self.name}: {_show(self.effective)}, as requested{where}"
        if self.status == "default":
            return f"{self.name}: not requested; the server uses {_show(self.effective)}{where}"
        return f"{self.name}: requested {_show(self.requested)}; the server does not say what it uses"

    def to_json(self) -> dict[str, Any]:
        doc = {"name": self.name, "requested": self.requested, "effective": self.effective,
               "source": self.source, "status": self.status}
        if self.note is not None:
            doc["note"] = self.note
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> KnobCheck:
        """Decode one check; ValueError says what is wrong with it."""
        if not isinstance(doc, dict):
            raise ValueError(f"expected an object, got {doc!r:.40}")
        name, status = doc.get("name"), doc.get("status")
        if not isinstance(name, str):
            raise ValueError(f"'name': expected a string, got {name!r:.40}")
        if status not in STATUSES:
            raise ValueError(f"'status': expected one of {', '.join(STATUSES)}, got {status!r:.40}")
        for key in ("source", "note"):
            if not isinstance(doc.get(key), (str, type(None))):
                raise ValueError(f"'{key}': expected a string or null, got {doc.get(key)!r:.40}")
        for key in ("requested", "effective"):
            if not isinstance(doc.get(key), _SCALARS):
                raise ValueError(f"'{key}': expected a number, string, true/false or null, got {doc.get(key)!r:.40}")
        return cls(name, doc.get("requested"), doc.get("effective"), doc.get("source"), status, doc.get("note"))

    @classmethod
    def legacy(cls, sentence: str) -> KnobCheck:
        """A mismatch as an older ddtune stored it (prose only): kept as a mismatch, its sentence as
        written; the values are unknown."""
        name = sentence.split(":", 1)[0].strip() or "?"
        return cls(name, None, None, None, "mismatch", note=sentence)


@dataclass(frozen=True)
class Verification:
    effective: dict[str, Any]
    sources: dict[str, str]
    checks: tuple[KnobCheck, ...]

    @property
    def mismatches(self) -> tuple[str, ...]:
        return mismatch_sentences(self.checks)


def mismatch_sentences(checks: tuple[KnobCheck, ...]) -> tuple[str, ...]:
    return tuple(c.sentence for c in checks if c.status == "mismatch")


Marked = Mapping[str, LogLine | str]  # marker -> the latest startup line holding it


def line_field(line: LogLine | str, name: str) -> tuple[bool, Any]:
    """(found, value) of ``name=value`` on a log line: from the event the log reader parsed it into
    (a bare text is parsed here, by the same parser), else from the text for a field no event holds."""
    text, event = (line.text, line.event) if isinstance(line, LogLine) else (line, parse_line(line))
    said = event.field(name) if event is not None else None
    if said is not None:
        return said[0], _norm(said[1])
    m = re.search(rf"(?:^|[\s,(]){re.escape(name)}=([^,\s)]*)", text)
    return (True, _norm(m.group(1))) if m else (False, None)


def _read(source: VerifySource, lines: Marked, info: Mapping[str, Any] | None) -> tuple[bool, Any]:
    if source.server_info:
        if info is None or source.server_info not in info:
            return False, None
        found, value = True, _norm(info[source.server_info])
    else:
        line = lines.get(source.marker or "")
        if line is None:
            return False, None
        found, value = line_field(line, source.field or "")
    if found and source.negate and isinstance(value, bool):
        value = not value
    return found, value


def _report(spec: KnobSpec, lines: Marked,
            info: Mapping[str, Any] | None) -> tuple[VerifySource, Any] | None:
    """(source, value) from the strongest source that says it, else None."""
    for source in spec.verify:
        found, value = _read(source, lines, info)
        if found:
            return source, value
    return None


def verify(expected: dict[str, Any], log_lines: Marked | None = None,
           server_info: dict[str, Any] | None = None, knobs: Mapping[str, KnobValue] | None = None,
           table: KnobTable | None = None) -> Verification:
    """Compare the LaunchPlan's ``expected`` with the server's reports: ``log_lines`` (marker ->
    the latest startup line holding it, as the log reader parsed it) and ``/server_info``.

    Checked: the base settings always, and every requested knob; one the server never reports
    (topk, a [knobs.map] knob) is "unverified", so a reader sees every requested knob's standing."""
    table = table or SHIPPED
    base = table.base  # the engine's settings checked on every start (SGLang's: BASE_KEYS)
    lines = log_lines or {}
    effective: dict[str, Any] = {k: None for k in base}
    sources: dict[str, str] = {}
    for spec in table.specs.values():
        said = _report(spec, lines, server_info) if spec.effective_key else None
        if said is not None and spec.effective_key:
            sources[spec.effective_key], effective[spec.effective_key] = said[0].name, said[1]
            if spec.effective_key == "window_size":  # the window decides the compact cache
                line = lines.get(said[0].marker or "")
                found, compact = line_field(line, "compact_cache") if line else (False, None)
                effective["compact_cache"] = compact if found else said[1] is not None
                sources["compact_cache"] = said[0].name
    keys = list(base)
    for name, value in (knobs or {}).items():
        key = table.spec(name).effective_key
        if value is not None and key and key not in keys:
            keys.append(key)
    checks = [_check(key, expected.get(key), effective.get(key), sources.get(key), table) for key in keys]
    for name, value in (knobs or {}).items():
        if value is not None and table.spec(name).effective_key is None:
            checks.append(KnobCheck(name, value, None, None, "unverified"))
    shown = {k: effective.get(k) for k in keys if k in base or k in sources}
    return Verification(effective=shown, sources=sources, checks=tuple(checks))


def _unset_is_default(key: str, table: KnobTable) -> bool:
    if key == "compact_cache":
        return False  # decided by the window: a cleared window means no compact cache
    spec = table.specs.get(table.for_effective_key(key))
    return spec.unset_is_default if spec is not None else False


def _check(key: str, want: Any, got: Any, source: str | None, table: KnobTable) -> KnobCheck:
    name = table.for_effective_key(key)
    if source is None:
        return KnobCheck(name, want, None, None, "unverified")
    if want is None and _unset_is_default(key, table):
        return KnobCheck(name, None, got, source, "default")
    status: Status = "verified" if _norm(want) == _norm(got) else "mismatch"
    return KnobCheck(name, want, got, source, status)


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("none", "null", ""):
            return None
        if low in ("true", "false"):
            return low == "true"
        for kind in (int, float):
            try:
                return kind(low)
            except ValueError:
                pass
    return value


def _show(value: Any) -> str:
    return "None" if value is None else str(value)

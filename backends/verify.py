"""Config verification: what we asked for versus what the server says it runs. Pure.

Sources, strongest first: the draft-window line (``Initialized DFLASH draft runner ...``), the
DDTree worker line, then ``/server_info`` (the parsed server args). The result is one typed
``KnobCheck`` per setting: verified, mismatch, unverified (the server did not say) or default (not
requested; the server picked). The sentence a user reads (``window: requested 2048, server says
None (draft runner line)``) is derived from a check, never stored in its place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from backends.knobs import KNOBS, KnobValue, knob_for_effective_key

EFFECTIVE_KEYS = ("window_size", "compact_cache", "block_size", "budget")
STATUSES = ("verified", "mismatch", "unverified", "default")
Status = Literal["verified", "mismatch", "unverified", "default"]

# settings the server reports that are not knobs, and whether leaving them unrequested lets it pick
_DERIVED_UNSET_IS_DEFAULT = {"compact_cache": False, "block_size": True}

_SERVER_INFO_KEYS = {
    "window_size": ("speculative_draft_window_size", "speculative_dflash_draft_window_size"),
    "block_size": ("speculative_num_draft_tokens", "speculative_dflash_block_size"),
    "budget": ("speculative_ddtree_budget",),
}
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


def _from_server_info(info: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, names in _SERVER_INFO_KEYS.items():
        for name in names:
            if name in info:
                out[key] = info[name]
                break
    return out


def _unset_is_default(key: str) -> bool:
    spec = KNOBS.get(knob_for_effective_key(key))
    return spec.unset_is_default if spec is not None else _DERIVED_UNSET_IS_DEFAULT.get(key, False)


def verify(expected: dict[str, Any], draft_runner: Any | None = None, ddtree: Any | None = None,
           server_info: dict[str, Any] | None = None,
           knobs: Mapping[str, KnobValue] | None = None) -> Verification:
    """Compare the LaunchPlan's ``expected`` with the server's reports (logparse events, /server_info).

    ``knobs`` (the requested knobs) adds an "unverified" check for each set knob the server never
    reports (topk, a [knobs.map] knob), so a reader sees every requested knob's standing."""
    effective: dict[str, Any] = {k: None for k in EFFECTIVE_KEYS}
    sources: dict[str, str] = {}
    if server_info:
        for key, value in _from_server_info(server_info).items():
            effective[key], sources[key] = value, "/server_info"
        if "window_size" in sources:
            effective["compact_cache"] = effective["window_size"] is not None
            sources["compact_cache"] = "/server_info"
    if ddtree is not None:
        for key, value in (("budget", ddtree.tree_budget), ("block_size", ddtree.block_size)):
            if value is not None:
                effective[key], sources[key] = value, "DDTree worker line"
    if draft_runner is not None:
        effective["window_size"], sources["window_size"] = draft_runner.window_size, "draft runner line"
        effective["compact_cache"], sources["compact_cache"] = draft_runner.compact_cache, "draft runner line"
        if draft_runner.block_size is not None:
            effective["block_size"], sources["block_size"] = draft_runner.block_size, "draft runner line"
    checks = [_check(key, expected.get(key), effective[key], sources.get(key)) for key in EFFECTIVE_KEYS]
    for name, value in (knobs or {}).items():
        if value is not None and (name not in KNOBS or KNOBS[name].effective_key is None):
            checks.append(KnobCheck(name, value, None, None, "unverified"))
    return Verification(effective=effective, sources=sources, checks=tuple(checks))


def _check(key: str, want: Any, got: Any, source: str | None) -> KnobCheck:
    name = knob_for_effective_key(key)
    if source is None:
        return KnobCheck(name, want, None, None, "unverified")
    if want is None and _unset_is_default(key):
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
        if low.isdigit():
            return int(low)
    return value


def _show(value: Any) -> str:
    return "None" if value is None else str(value)

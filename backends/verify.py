"""Config verification: what we asked for versus what the server says it runs. Pure.

Sources, strongest first: the draft-window line (``Initialized DFLASH draft runner ...``), the
DDTree worker line, then ``/server_info`` (the parsed server args). Every disagreement is a
mismatch, worded so a user sees it at a glance: ``window: requested 2048, server says None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EFFECTIVE_KEYS = ("window_size", "compact_cache", "block_size", "budget")

_SERVER_INFO_KEYS = {
    "window_size": ("speculative_draft_window_size", "speculative_dflash_draft_window_size"),
    "block_size": ("speculative_num_draft_tokens", "speculative_dflash_block_size"),
    "budget": ("speculative_ddtree_budget",),
}


@dataclass(frozen=True)
class Verification:
    effective: dict[str, Any]
    sources: dict[str, str]
    mismatches: tuple[str, ...]


def _from_server_info(info: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, names in _SERVER_INFO_KEYS.items():
        for name in names:
            if name in info:
                out[key] = info[name]
                break
    return out


def verify(expected: dict[str, Any], draft_runner: Any | None = None, ddtree: Any | None = None,
           server_info: dict[str, Any] | None = None) -> Verification:
    """Compare the LaunchPlan's ``expected`` with the server's reports (logparse events, /server_info)."""
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
    mismatches = []
    names = {"window_size": "window", "compact_cache": "compact_cache", "block_size": "block_size",
             "budget": "budget"}
    for key in EFFECTIVE_KEYS:
        if key not in sources:
            continue  # the server did not say: unverified, not a mismatch
        want, got = expected.get(key), effective[key]
        if key in ("budget", "block_size") and want is None:
            continue  # not requested explicitly: whatever the server picked is fine
        if _norm(want) != _norm(got):
            mismatches.append(f"{names[key]}: requested {_show(want)}, server says {_show(got)} ({sources[key]})")
    return Verification(effective=effective, sources=sources, mismatches=tuple(mismatches))


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

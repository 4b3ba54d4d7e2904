"""What the simulator reads from a draft model folder, as SGLang reads a DFlash draft's config.json.

SGLang takes the DFlash block size from the draft's config (``block_size`` at the top level, or in
``dflash_config``; sglang/srt/speculative/dflash_utils.py) when no flag sets it. The tiny drafts of
``ddtune selftest`` also carry ``ddtune_selftest.draft`` = ``agree`` or ``random``: what their
weights make a real server do (every drafted token accepted, or almost none), which the simulator
imitates. A name that is no folder (``demo-draft``) gives nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from backends.core.datafile import read_json
from backends.core.errors import DdtuneError

MAX_CONFIG_BYTES = 1024**2  # a model's config.json is a few KB


@dataclass(frozen=True)
class DraftDir:
    block_size: int | None = None
    agreement: str | None = None     # "agree" | "random" | None (the performance model decides)


def read_draft_dir(path: str | None) -> DraftDir:
    if not path:
        return DraftDir()
    try:
        doc = read_json(os.path.join(path, "config.json"), max_bytes=MAX_CONFIG_BYTES)  # a regular file, bounded
    except DdtuneError:
        return DraftDir()
    if not isinstance(doc, dict):
        return DraftDir()
    found = doc.get("dflash_config")
    nested: dict = found if isinstance(found, dict) else {}
    raw = nested.get("block_size", doc.get("block_size"))
    block = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1 else None
    marker = doc.get("ddtune_selftest")
    agreement = marker.get("draft") if isinstance(marker, dict) else None
    return DraftDir(block, agreement if agreement in ("agree", "random") else None)

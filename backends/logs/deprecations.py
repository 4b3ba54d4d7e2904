"""What a server's log says is deprecated in how it was started. Pure.

A real sglang 0.5.17 prints, at launch: ``'python -m sglang.launch_server' is still supported, but
'sglang serve' is the recommended entrypoint``, and for old flags ``'--speculative-dflash-draft-window-size'
is deprecated ... Use '--speculative-draft-window-size'`` or ``'--disable-cuda-graph' is deprecated ...
Use '--cuda-graph-backend-{decode,prefill}=disabled'`` (in yellow ANSI, gone once the line is plain).
``deprecation(line)`` turns such a line into a short note; anything else is None.
"""

from __future__ import annotations

import re

_FLAG = re.compile(r"'(--[A-Za-z0-9][\w-]*)' is deprecated(?:.*?[Uu]se '([^']+)')?")
_ENTRY = re.compile(r"'([^']+)' is still supported, but '([^']+)' is the recommended entrypoint")


def deprecation(line: str) -> str | None:
    """``--old-flag is deprecated: use --new-flag`` / ``entrypoint ...``; None for other lines."""
    m = _FLAG.search(line)
    if m:
        return f"{m[1]} is deprecated" + (f": use {m[2]}" if m[2] else "")
    m = _ENTRY.search(line)
    if m:
        return f"entrypoint '{m[1]}' still works, '{m[2]}' is recommended"
    return None

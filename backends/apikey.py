"""API keys: where ddtune finds the key, and how it keeps it out of everything it prints or writes.

The key of a managed server is the ``--api-key`` of the command ddtune launched (from the config's
``extra_args``), else ``$DDTUNE_API_KEY``. Every argv, note, state file and copy of the server's own
``server_args`` that ddtune prints or stores is redacted; the real argv lives only in the 0600
launch record (backends.state), where a later ddtune finds the key of the server it re-attaches to.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

KEY_FLAGS = ("--api-key", "--admin-api-key")
KEY_FIELDS = ("api_key", "admin_api_key")  # the same flags in SGLang's server_args / /server_info
REDACTED = "***"
ENV_KEY = "DDTUNE_API_KEY"


def argv_api_key(argv: Sequence[str]) -> str | None:
    """The value of ``--api-key`` in argv (``--api-key K`` or ``--api-key=K``), else None."""
    for i, arg in enumerate(argv):
        if arg == "--api-key" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--api-key="):
            return arg.split("=", 1)[1]
    return None


def api_key(argv: Sequence[str] = ()) -> str | None:
    """The key for requests to a server launched with argv: its ``--api-key``, else $DDTUNE_API_KEY."""
    return argv_api_key(argv) or os.environ.get(ENV_KEY) or None


def auth_headers(key: str | None) -> dict[str, str]:
    """The header SGLang checks for ``--api-key`` (a Bearer token); none without a key."""
    return {"Authorization": f"Bearer {key}"} if key else {}


def redact_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """argv with the value of every key flag replaced by ``***``."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif arg in KEY_FLAGS:
            out.append(arg)
            hide_next = True
        elif any(arg.startswith(flag + "=") for flag in KEY_FLAGS):
            out.append(arg.split("=", 1)[0] + "=" + REDACTED)
        else:
            out.append(arg)
    return tuple(out)


def redact(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A deep copy of JSON-like data with key fields blanked and every known secret string replaced.

    For copies of data the server reports about itself (``/server_info`` holds ``api_key`` and
    ``launch_command`` strings): whatever shape they take, the key does not survive."""
    known = [s for s in secrets if s and len(s) >= 1]

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: (REDACTED if k in KEY_FIELDS and item[k] else walk(item[k])) for k in item}
        if isinstance(item, (list, tuple)):
            return [walk(x) for x in item]
        if isinstance(item, str):
            for secret in known:
                item = item.replace(secret, REDACTED)
            return item
        return item

    return walk(value)

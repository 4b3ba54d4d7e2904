"""API keys: where ddtune finds the key, and how it keeps it out of everything it prints or writes.

The key of a managed server is the ``--api-key`` of the command ddtune launched (from the config's
``extra_args``), else ``$DDTUNE_API_KEY``. Every argv, note, state file and copy of the server's own
``server_args`` that ddtune prints or stores is redacted; the real argv lives only in the 0600
launch record (backends.record.state), where a later ddtune finds the key of the server it re-attaches to.

Text (log lines, error messages, what a command prints) goes through ``mask``: the key where
SGLang's own dump and argv print it (``api_key='...'``, ``'api_key': '...'``, ``--api-key K``,
``Bearer K``), and every key this process has learned (``remember``; the lookups below remember
what they find) wherever it stands in the text.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

KEY_FLAGS = ("--api-key", "--admin-api-key")
KEY_FIELDS = ("api_key", "admin_api_key")  # the same flags in SGLang's server_args / /server_info
REDACTED = "***"
ENV_KEY = "DDTUNE_API_KEY"
MIN_LITERAL = 4  # a shorter key is not masked wherever it appears as text (it would garble every line)

_known: set[str] = set()
_VALUE = r"""('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|[^\s,;)}\]'"]+)"""
# api_key='K'  'api_key': 'K'  "admin_api_key": "K"  DDTUNE_API_KEY=K  --api-key=K  x-api-key: K
_ASSIGNED = re.compile(r"(?i)((?<![A-Za-z0-9])[A-Za-z0-9_-]*api[_-]key['\"]?\s*[=:]\s*)" + _VALUE)
# --api-key K  and argv printed as a list: '--api-key', 'K'
_FLAG_ARG = re.compile(r"(?i)(--(?:admin-)?api-key(?:['\"]?,)?\s+['\"]?)(?!--)([^\s'\",)\]]+)")
_BEARER = re.compile(r"(?i)(\bBearer\s+)([^\s'\",]+)")
_HINT = re.compile(r"(?i)api.?key|bearer")
_NOT_SECRET = {"None", "null", "none", "''", '""', REDACTED, f"'{REDACTED}'", f'"{REDACTED}"'}


def remember(*keys: str | None) -> None:
    """Keys ``mask`` hides wherever they appear, for the rest of this process."""
    _known.update(k for k in keys if k and len(k) >= MIN_LITERAL)


def known_keys() -> frozenset[str]:
    return frozenset(_known)


def argv_secrets(argv: Sequence[str]) -> tuple[str, ...]:
    """The values of every key flag in argv (``--api-key``, ``--admin-api-key``, either form)."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg in KEY_FLAGS and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif any(arg.startswith(flag + "=") for flag in KEY_FLAGS):
            out.append(arg.split("=", 1)[1])
    return tuple(out)


def _hide(match: re.Match[str]) -> str:
    value = match.group(2)
    if value in _NOT_SECRET:
        return match.group(0)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return f"{match.group(1)}{value[0]}{REDACTED}{value[0]}"
    return match.group(1) + REDACTED


def mask(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every API key replaced by ``***``: the keys this process knows and ``secrets``
    wherever they stand, and any value where a key is printed (see the module docstring). Text
    with no key in it comes back as it was, at the cost of one regex search."""
    for secret in (*_known, *(s for s in secrets if s and len(s) >= MIN_LITERAL)):
        if secret in text:
            text = text.replace(secret, REDACTED)
    if _HINT.search(text) is None:
        return text
    return _BEARER.sub(_hide, _FLAG_ARG.sub(_hide, _ASSIGNED.sub(_hide, text)))


def argv_api_key(argv: Sequence[str]) -> str | None:
    """The value of ``--api-key`` in argv (``--api-key K`` or ``--api-key=K``), else None."""
    for i, arg in enumerate(argv):
        if arg == "--api-key" and i + 1 < len(argv):
            remember(argv[i + 1])
            return argv[i + 1]
        if arg.startswith("--api-key="):
            remember(arg.split("=", 1)[1])
            return arg.split("=", 1)[1]
    return None


def launched_key(argv: Sequence[str]) -> str | None:
    """The ``--api-key`` in a server's argv as launched; None in a redacted one (``REDACTED``)."""
    key = argv_api_key(argv)
    return key if key and key != REDACTED else None


def api_key(argv: Sequence[str] = ()) -> str | None:
    """The key for requests to a server launched with argv: its ``--api-key``, else $DDTUNE_API_KEY."""
    key = argv_api_key(argv) or os.environ.get(ENV_KEY) or None
    remember(key)
    return key


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


def shown_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """argv as the console's notes show it: keys redacted, and ddtune's own interpreter (the simulator's)
    as ``python``, not a path of this machine (screenshots and shared logs carry no home or venv path).
    A configured interpreter stays whole: which Python runs SGLang is worth seeing."""
    out = redact_argv(argv)
    return ("python", *out[1:]) if out and out[0] == sys.executable else out

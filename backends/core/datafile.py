"""Read the files a user hands ddtune (config, presets, plans, problems, run records) one way.

Each reader turns every way a file can be unreadable - missing, a folder, no permission, not
UTF-8 (binary, UTF-16), not TOML or JSON - into one error that names the file and says what to
do, so no caller needs its own try/except and no traceback ever reaches the user. The error class
is the caller's: ConfigError for config-like files, UsageError for files named on the command
line (both exit 2).
"""

from __future__ import annotations

import json
import os
import tomllib
from typing import Any

from backends.core.errors import ConfigError, DdtuneError

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
MAX_DEPTH = 100            # JSON nesting: what ddtune writes stays under 10 levels
MAX_BYTES = 512 * 1024**2  # the largest file read whole (a long run's responses.jsonl stays well under)
MAX_TOML_BYTES = 16 * 1024**2  # config, presets, plans: a few KB


class TooDeep(ValueError):
    """JSON nested deeper than ``MAX_DEPTH`` (a ValueError, like every other JSON that is unusable)."""


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` for data from a file: nesting past ``max_depth`` levels is a ``TooDeep``
    error (a ValueError), never a RecursionError here or in whatever walks the value later."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"nested more than {max_depth} levels deep") from None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise TooDeep(f"nested more than {max_depth} levels deep")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return value


def read_text(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
              hint: str = "check the path and its permissions", max_bytes: int = MAX_BYTES) -> str:
    """The file as text. UTF-8 only (a leading UTF-8 BOM is dropped): any other encoding is refused
    rather than guessed, since a wrong guess would quietly change values. A file over
    ``max_bytes`` is refused before it is read."""
    label = name or str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise error(f"{label}: larger than the {max_bytes // 1024**2} MB ddtune reads from such a file",
                        hint="is it the right file? split it, or give the file ddtune wrote")
    except FileNotFoundError:
        raise error(f"{label}: no such file", hint=hint) from None
    except IsADirectoryError:
        raise error(f"{label}: is a directory, not a file", hint=hint) from None
    except OSError as exc:
        raise error(f"{label}: cannot read it: {exc.strerror or exc}", hint=hint) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        what = "UTF-16 text" if data.startswith(_UTF16_BOMS) else "binary or not UTF-8"
        raise error(f"{label}: not a UTF-8 text file ({what}; bad byte at offset {exc.start})",
                    hint="save the file as UTF-8 text") from None


def read_toml(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError,
              name: str | None = None) -> dict[str, Any]:
    """The TOML document in the file, as a dict."""
    label = name or str(path)
    text = read_text(path, error, label, max_bytes=MAX_TOML_BYTES)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{label}: not valid TOML: {exc}", hint="fix the syntax at the line named above") from None
    except RecursionError:
        raise error(f"{label}: not valid TOML: nested too deeply", hint="flatten the nested arrays or tables") from None


def read_json(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
              hint: str = "check the path and its permissions") -> Any:
    """The JSON document in the file (any JSON value: callers check the shape they need)."""
    label = name or str(path)
    text = read_text(path, error, label, hint)
    try:
        return loads(text)
    except TooDeep as exc:
        raise error(f"{label}: JSON {exc}", hint=hint) from None
    except ValueError as exc:
        raise error(f"{label}: not JSON: {exc}", hint=hint) from None


def parse_jsonl(text: str) -> list[tuple[int, Any]]:
    """(line number, value) of every line that holds JSON. A line that does not is skipped: the
    stores append one line at a time, so a crash can leave a torn last line behind. Lines end at
    ``\n`` only: records are written with ``ensure_ascii=False``, so a string may hold U+2028 or
    other characters ``str.splitlines`` would break on."""
    out: list[tuple[int, Any]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((lineno, loads(line)))
        except ValueError:
            continue
    return out

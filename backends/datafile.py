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
from pathlib import Path
from typing import Any

from backends.errors import ConfigError, DdtuneError

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def read_text(path: str | os.PathLike[str], error: type[DdtuneError] = ConfigError, name: str | None = None,
              hint: str = "check the path and its permissions") -> str:
    """The file as text. UTF-8 only (a leading UTF-8 BOM is dropped): any other encoding is refused
    rather than guessed, since a wrong guess would quietly change values."""
    label = name or str(path)
    try:
        data = Path(path).read_bytes()
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
    text = read_text(path, error, label)
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
        return json.loads(text)
    except ValueError as exc:
        raise error(f"{label}: not JSON: {exc}", hint=hint) from None
    except RecursionError:
        raise error(f"{label}: not JSON: nested too deeply", hint=hint) from None


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
            out.append((lineno, json.loads(line)))
        except (ValueError, RecursionError):
            continue
    return out

"""Typed checks of the values read from a user's file, each failure one error naming the file, the
field, what was expected and what was found, and the fix.

TOML and JSON hand back whatever the user wrote, so every field is checked here before use: a
wrong type must not surface later as an AttributeError, a NaN timeout or a NUL byte that only
breaks at spawn time.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, cast
from urllib.parse import urlsplit

from backends.core.errors import ConfigError, DdtuneError, UsageError

INT64_MAX = 2**63 - 1  # TOML's integer range; JSON's is unbounded, but nothing ddtune writes comes near
MAX_NAME = 4096       # a name, path or URL: Linux's PATH_MAX (a Hugging Face id is under 100 characters)
MAX_ARG = 128 * 1024 - 1  # one argv or environment string: the kernel refuses longer (MAX_ARG_STRLEN)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
          list: "a list", dict: "a table", type(None): "null"}
_JSON_NAMES = {**_NAMES, list: "an array", dict: "an object"}


def key_name(name: object) -> str:
    """A key as the user would write it: bare when TOML allows, else quoted (so a key holding a
    newline or a control character still prints on one line)."""
    text = str(name)
    return text if _BARE_KEY.fullmatch(text) else json.dumps(text)


def kind_name(kinds: tuple[type, ...], in_json: bool = False) -> str:
    names = _JSON_NAMES if in_json else _NAMES
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def shown(value: Any, limit: int = 60, in_json: bool = False) -> str:
    """A value for a message, on one line and cut to ``limit`` characters: as JSON for a value read
    from JSON (null, not None), else its repr."""
    text = json.dumps(value, default=repr) if in_json else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def fail(source: str, where: str, problem: str, fix: str, error: type[DdtuneError] = ConfigError) -> DdtuneError:
    return error(f"{source}: {where}: {problem}", hint=fix)


def expect(source: str, where: str, value: Any, kinds: type | tuple[type, ...], fix: str,
           error: type[DdtuneError] = ConfigError, in_json: bool = False, max_len: int | None = None) -> Any:
    """``value`` when it is one of ``kinds``. true/false is never a number here (bool is an int in
    Python); a number must be finite and an integer fit in 64 bits; a string must not hold a NUL
    byte (no argv or environment can carry one) nor be longer than ``max_len`` characters;
    ``float`` in ``kinds`` admits integers too. ``in_json`` words the message for a JSON file
    (object, array, null)."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    ok = isinstance(value, kinds) or (float in kinds and isinstance(value, int))
    if isinstance(value, bool) and bool not in kinds:
        ok = False
    if not ok:
        raise fail(source, where, f"expected {kind_name(kinds, in_json)}, got {shown(value, in_json=in_json)}",
                   fix, error)
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(source, where, f"expected a finite number, got {value}", fix, error)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64_MAX:
        raise fail(source, where, f"{shown(value)} is out of range (64-bit integers only)", fix, error)
    if isinstance(value, str) and "\x00" in value:
        raise fail(source, where, "holds a NUL byte (\\u0000)", f"remove it; {fix}", error)
    if isinstance(value, str) and max_len is not None and len(value) > max_len:
        raise fail(source, where, f"is {len(value):,} characters long, more than the {max_len:,} ddtune takes",
                   f"shorten it; {fix}", error)
    return value


def url_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a server's base URL (http or https, a host, a port from 1 to
    65535 when one is given), or None when nothing is."""
    if len(text) > MAX_NAME:
        return f"is {len(text):,} characters long, more than the {MAX_NAME:,} ddtune takes"
    if any(c.isspace() or ord(c) < 0x20 for c in text):
        return f"{shown(text)} holds a space or a control character"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535", "Port could not be cast"
        if "out of range" in str(exc):
            return f"{shown(text)}: the port is out of range (1-65535)"
        return f"{shown(text)} is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{shown(text)} is not an http:// or https:// URL with a host"
    if port == 0:
        return f"{shown(text)}: port 0 is out of range (1-65535)"
    return None


def server_base(url: str, check: bool = False) -> str:
    """A server's base URL as ddtune joins paths to it: no trailing slash, and no ``/v1`` (the
    OpenAI-style base people paste: ``http://host:30000/v1`` asked ``/v1/v1/models``). ``check``:
    first raise UsageError with what ``url_problem`` finds wrong (a --url typed by the user)."""
    problem = url_problem(url) if check else None
    if problem is not None:
        raise UsageError(problem, hint="expected http://HOST:PORT")
    url = url.rstrip("/")
    return url[:-3].rstrip("/") if url.endswith("/v1") else url


def positive(source: str, where: str, value: Any, fix: str, integer: bool = False,
             error: type[DdtuneError] = ConfigError) -> Any:
    """A finite number (an integer when ``integer``) greater than 0."""
    value = expect(source, where, value, int if integer else float, fix, error)
    if value <= 0:
        raise fail(source, where, f"must be > 0, got {value}", fix, error)
    return value


def bounded(value: Any, low: float, high: float, what: str, integer: bool = False) -> Any:
    """A number read back from a record ddtune wrote, proven plausible: finite, from ``low`` to
    ``high`` (an integer when ``integer``; never true/false). Else a ValueError naming ``what``, so
    one absurd value (a 400-digit count, NaN, a negative time) is refused where it is read instead of
    overflowing, looping or printing as ``nan`` later."""
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise ValueError(f"{what}: expected {'an integer' if integer else 'a number'}, got {shown(value, 40, True)}")
    number = cast(float, value)  # an int or a float, as just checked
    if not low <= number <= high:  # NaN fails this too; a 400-digit integer compares without overflow
        raise ValueError(f"{what}: {shown(value, 40, True)} is not from {low:g} to {high:g}")
    return value if integer else float(number)

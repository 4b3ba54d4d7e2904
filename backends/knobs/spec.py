"""One knob as data: its type and bounds (the validator is generated from them), how it reaches the
server (routes), how the server reports it back (verify sources), and its help line.

Pure. ``KnobSpec.parse`` turns text (``--set``, the editor) or a TOML value into the typed value,
or a ConfigError naming the source, the knob and a value that would be taken. Declarations are
read into specs by ``backends.knobs.decl``; launch planning is ``backends.knobs.plan``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from backends.core.errors import ConfigError
from backends.core.fields import expect, fail, key_name, shown

KnobValue = int | float | str | bool | None  # None means "none": the knob is cleared (no flag, no env var)
SERVER_DEFAULT = "the server's default"
DEFAULT_BLOCK_SIZE = 16  # SGLang's fallback when neither the flags nor the draft config give one
BLOCK_SIZE = "block_size"  # the knob an ``at_least`` rule may name for the server's block size
TYPES = ("int", "float", "bool", "choice", "str")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def knob_text(value: Any) -> str:
    """A knob value as the user writes it: ``none`` for None (what --set and the TOML take)."""
    if value is None:
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def as_count(value: Any) -> int | None:
    """``value`` when it is an integer (true/false are not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def version_key(text: str) -> tuple[int, ...]:
    """``0.5.12.post1`` -> (0, 5, 12): the release numbers, for since/until checks."""
    parts = re.match(r"\d+(?:\.\d+)*", text.strip().lstrip("vb"))
    return tuple(int(p) for p in parts.group(0).split(".")) if parts else ()


@dataclass(frozen=True)
class KnobRoute:
    """How one knob reaches the server: a flag or an env var (value + offset), maybe a switch flag."""

    knob: str
    flag: str | None = None
    env: str | None = None
    offset: int = 0
    switch: str | None = None
    algorithm: str | None = None
    source: str = "config"

    def describe(self) -> str:
        return self.flag if self.flag else f"env {self.env}"


@dataclass(frozen=True)
class DataRoute:
    """A declared route and when it applies: ``when_help_has`` a flag in the server's --help (a flag
    route defaults to its own flag), and the SGLang releases that have it (checked when known)."""

    route: KnobRoute
    when_help_has: str | None = None
    since: str | None = None
    until: str | None = None

    def why_not(self, flags: frozenset[str], version: str | None) -> str | None:
        """None when this route fits the server, else why not (one clause)."""
        if self.when_help_has and self.when_help_has not in flags:
            return f"{self.when_help_has} is not in its --help"
        key = version_key(version) if version else ()
        if key and self.since and key < version_key(self.since):
            return f"{self.route.describe()} needs SGLang >= {self.since}"
        if key and self.until and key > version_key(self.until):
            return f"{self.route.describe()} is gone after SGLang {self.until}"
        return None


@dataclass(frozen=True)
class VerifySource:
    """Where the server says what it runs: ``field=value`` on the latest log line holding ``marker``
    (the ``server_args=`` dump is read in both its styles), or a key of ``/server_info``."""

    server_info: str | None = None
    marker: str | None = None
    field: str | None = None
    label: str | None = None
    negate: bool = False  # a bool the server reports inverted (disable_overlap_schedule for spec v2)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return "/server_info" if self.server_info else f"log line '{self.marker}'"


@dataclass(frozen=True)
class KnobSpec:
    """One knob. ``type`` any: a [knobs.map] knob nobody declared (an integer, a string or true/false)."""

    name: str
    help: str
    type: str = "int"
    unit: str = ""
    minimum: float | None = None          # inclusive
    above: float | None = None            # exclusive lower bound (a ratio > 0)
    maximum: float | None = None          # inclusive
    choices: tuple[str, ...] = ()
    nullable: bool = True                 # "none" clears it
    default: KnobValue = None             # the value before any config, preset or --set
    none_means: str = SERVER_DEFAULT      # what clearing the knob leaves the server running
    example: KnobValue = None             # a value hints suggest (derived from the bounds when unset)
    pinned: bool = False                  # always listed (status, the server panel), even when none
    at_least: str | None = None           # another knob this one may not be below (block_size: the server's)
    requires: tuple[str, ...] = ()        # knobs that must be set too
    routes: tuple[DataRoute, ...] = ()
    unsupported: str | None = None        # why no route fits, said when none does
    verify: tuple[VerifySource, ...] = ()  # strongest first; empty: the server never says
    report_as: str | None = None          # the key verification stores it under (default: the name)
    source: str = "built-in"
    engine: str = "sglang"                # the engine whose table holds it (flavours.toml: engine = ...)

    @property
    def effective_key(self) -> str | None:
        return (self.report_as or self.name) if self.verify else None

    @property
    def unset_is_default(self) -> bool:
        """Cleared means the server picks: whatever it reports then is not a mismatch."""
        return self.none_means == SERVER_DEFAULT

    @property
    def hint_value(self) -> KnobValue:
        """The value hints suggest: the declared example, else one inside the bounds."""
        if self.example is not None:
            return self.example
        if self.type == "bool":
            return True
        if self.type == "choice":
            return self.choices[0] if self.choices else "text"
        if self.type == "str":
            return "text"
        low = self.minimum if self.minimum is not None else (self.above if self.above is not None else None)
        if self.type == "float":
            if self.maximum is not None:
                return float(self.maximum)
            return float(low + 1) if low is not None else 0.5
        value = 8 if low is None else max(8, math.ceil(low + (1 if self.above is not None else 0)))
        return int(min(value, self.maximum)) if self.maximum is not None else int(value)

    def bounds_text(self) -> str:
        """``> 0``, ``from 1 to 64``, ``>= 1``: the declared bounds in words ('' when none)."""
        low = f">= {_num(self.minimum)}" if self.minimum is not None else (
            f"> {_num(self.above)}" if self.above is not None else "")
        high = f"<= {_num(self.maximum)}" if self.maximum is not None else ""
        if self.minimum is not None and high:
            return f"from {_num(self.minimum)} to {_num(self.maximum)}"
        return " and ".join(p for p in (low, high) if p)

    def wanted(self) -> str:
        """What a value must be, for the message: ``a positive integer``, ``a number > 0 and <= 1``."""
        if self.type == "int":
            if self.minimum == 1 and self.maximum is None:
                return "a positive integer"
            return f"an integer {self.bounds_text()}".rstrip()
        if self.type == "float":
            return f"a number {self.bounds_text()}".rstrip()
        if self.type == "bool":
            return "true or false"
        if self.type == "choice":
            return "one of " + ", ".join(self.choices)
        if self.type == "str":
            return "a string"
        return "an integer, string or true/false"

    def value_hint(self, block_size: int | None = None, source: str = "editor") -> str:
        """The fix for a bad value, suggesting one the server takes (a window at least the block size),
        written the way ``source`` takes it: a CLI flag (``--set window=2048``), the config file
        (``window = 2048`` under ``[knobs]``) or the console's editor (``set window = 2048``)."""
        name = key_name(self.name)
        flag = source.split()[0] if source.startswith("--") and not source.startswith("--plan") else None
        under = " under [knobs]" if flag is None and source != "editor" and ": " not in source \
            and not source.startswith("--plan") else ""

        def said(value: str, quoted: bool = False) -> str:
            if flag:
                return f"{flag} {self.name}={value}"
            return f'{name} = "{value}"' if quoted else f"{name} = {value}"

        lead = "" if flag else "set "
        clear = (f', or {said("none", True)}' + ("" if self.at_least else " to clear it")) if self.nullable else ""
        if self.type == "any":
            return f'{said("8")}, {said("text", True)}, {said("true")}, or {said("none", True)} to clear it'
        if self.at_least == BLOCK_SIZE and self.type == "int":
            block = block_size or DEFAULT_BLOCK_SIZE
            value = max(int(self.hint_value or 0), block)
            return f"{lead}{said(str(value))}{under} (an integer >= the block size, {block}){clear}"
        if self.type == "int" and self.minimum == 1 and self.maximum is None:
            return f"{lead}{said(str(self.hint_value))}{under} (any integer > 0){clear}"
        if self.type in ("int", "float"):
            bounds = self.bounds_text()
            what = "an integer" if self.type == "int" else "a number"
            return f"{lead}{said(str(self.hint_value))}{under}" + (f" ({what} {bounds})" if bounds else "") + clear
        if self.type == "bool":
            return f"{lead}{said('true')} or {said('false')}{under}{clear}"
        if self.type == "choice":
            if flag:
                return f"{said(self.choices[0])} (one of {', '.join(self.choices)}){clear}"
            return f"{lead}{name} = {', '.join(repr(c) for c in self.choices)}{under} (one of them){clear}"
        return f'{lead}{said(str(self.hint_value), True)}{under}{clear}'

    def parse(self, raw: Any, source: str = "--set", block_size: int | None = None) -> KnobValue:
        """Text (``--set``, the editor) or a TOML value -> the typed value; "none" clears the knob.
        ConfigError names ``source``, the knob and the fix (with ``block_size`` when known: the
        editor's). true/false is never a number here."""
        where = f"knob '{key_name(self.name)}'"
        hint = self.value_hint(block_size, source)
        if isinstance(raw, str) and raw.strip().lower() == "none":
            if not self.nullable:
                raise fail(source, where, f"cannot be none: it needs {self.wanted()}", hint)
            return None
        if self.type == "bool":
            return self._bool(raw, source, where, hint)
        if self.type in ("choice", "str"):
            text = expect(source, where, raw, str, hint).strip()
            if self.type == "str":
                if not text:
                    raise fail(source, where, "is empty", hint)
                return text
            found = next((c for c in self.choices if c.lower() == text.lower()), None)
            if found is None:
                raise fail(source, where, f"expected {self.wanted()}, got {shown(raw)}", hint)
            return found
        if isinstance(raw, str):
            raw = _scalar(raw, numbers_only=self.type != "any")
        if self.type == "any":
            return self._generic(raw, source, where)
        number: float | int | None = as_count(raw)
        if self.type == "float" and number is None and isinstance(raw, float) and math.isfinite(raw):
            number = raw
        if number is None or not self._in_bounds(number):
            raise fail(source, where, f"expected {self.wanted()}" + (' or "none"' if self.nullable else "")
                       + f", got {shown(raw)}", hint)
        return float(number) if self.type == "float" else number

    def _in_bounds(self, value: float) -> bool:
        return not ((self.minimum is not None and value < self.minimum)
                    or (self.above is not None and value <= self.above)
                    or (self.maximum is not None and value > self.maximum))

    def _bool(self, raw: Any, source: str, where: str, hint: str) -> bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, int) and raw in (0, 1):
            return bool(raw)
        if isinstance(raw, str) and raw.strip().lower() in _TRUE + _FALSE:
            return raw.strip().lower() in _TRUE
        raise fail(source, where, f"expected true or false, got {shown(raw)}", hint)

    def _generic(self, raw: Any, source: str, where: str) -> KnobValue:
        if isinstance(raw, float):
            raise fail(source, where, f"expected an integer, string or true/false, got {shown(raw)}",
                       f"write {key_name(self.name)} = {int(raw) if math.isfinite(raw) else 1} or quote it")
        return expect(source, where, raw, (int, str, bool), self.value_hint(source=source))

    def describe(self) -> str:
        """One line for --help and the editor: what it is, its unit, what "none" means."""
        unit = f" [{self.unit}]" if self.unit else ""
        return f"{self.help}{unit}; none = {self.none_means}"


def _num(value: float | None) -> str:
    return f"{value:g}" if value is not None else ""


def _scalar(text: str, numbers_only: bool) -> Any:
    """Typed text: true/false, an integer, a number (typed knobs only), else the text itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(low)
    except ValueError:
        pass
    if numbers_only:
        try:
            return float(low)
        except ValueError:
            return text.strip()
    return text.strip()


def generic_spec(name: str, route: KnobRoute | None = None) -> KnobSpec:
    """The spec of a [knobs.map] knob nobody declared: any scalar, never reported back."""
    how = f"passed as {route.describe()}" if route else "a [knobs.map] knob"
    return KnobSpec(name, help=how, type="any", source="[knobs.map]")


__all__ = ["ConfigError", "DataRoute", "KnobRoute", "KnobSpec", "KnobValue", "VerifySource", "generic_spec"]

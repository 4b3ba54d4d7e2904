"""Knob declarations in TOML -> KnobSpecs, and the one table of knobs they make.

The shipped knobs are declared in presets/flavours.toml; a user's config declares more (or
replaces a shipped one) under the same ``[knob.NAME]`` tables (docs/knobs.md)::

    [knob.draft_kv_ratio]
    help = "draft KV pool as a fraction of the target's"
    type = "float"                     # int, float, bool, choice (with choices = [...]) or str
    above = 0.0                        # bounds: min / max (inclusive), above (exclusive)
    max = 1.0
    flag = "--speculative-draft-kv-ratio"        # or env = "SGLANG_..."; or route = [{...}, ...]
    verify = { server_info = "speculative_draft_kv_ratio" }   # or { log = "...", field = "..." }, or "unverifiable"

Every mistake is a ConfigError naming the file, ``[knob.NAME] field`` and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from backends.core.errors import ConfigError
from backends.core.fields import expect, fail, key_name, shown
from backends.knobs.spec import (BLOCK_SIZE, TYPES, DataRoute, KnobRoute, KnobSpec, KnobValue, VerifySource,
                                 generic_spec, version_key)

_FIELDS = {"help", "type", "unit", "min", "max", "above", "choices", "none", "default", "none_means", "example",
           "pinned", "at_least", "requires", "flag", "env", "since", "until", "route", "unsupported", "verify",
           "report_as", "offset", "switch", "algorithm", "when_help_has", "engine"}
_ROUTE_FIELDS = {"flag", "env", "when_help_has", "since", "until", "offset", "switch", "algorithm", "source"}
_VERIFY_FIELDS = {"log", "field", "server_info", "label", "negate"}
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_VERSION = re.compile(r"\d+(\.\d+)*([.a-z0-9+-]*)")
_ROUTE_FIX = 'flag = "--my-flag", or env = "MY_ENV_VAR", or route = [{ flag = "--a" }, { flag = "--b" }]'
_VERIFY_FIX = ('verify = { server_info = "my_flag" }, { log = "Initialized X.", field = "my_field" }, '
               'a list of them (strongest first), or "unverifiable"')


def declare(name: Any, raw: Any, source: str) -> KnobSpec:
    """One ``[knob.NAME]`` table -> its spec; ConfigError names the field and the fix."""
    where = f"[knob.{key_name(name)}]"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise fail(source, where, "a knob name is lower-case letters, digits and _ (it is typed in --set NAME=...)",
                   "rename it, e.g. [knob.my_knob]")
    expect(source, where, raw, dict, f'{where} then type = "int" and flag = "--my-flag"')
    at = lambda key: f"{where} {key}"  # noqa: E731
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise fail(source, at(key_name(unknown[0])), "unknown field",
                   f"a declaration takes {', '.join(sorted(_FIELDS))}")
    if "type" not in raw:
        raise fail(source, at("type"), "missing: every knob has a type", f'type = {" | ".join(map(repr, TYPES))}')
    kind = expect(source, at("type"), raw["type"], str, f"type = one of {', '.join(TYPES)}")
    if kind not in TYPES:
        raise fail(source, at("type"), f"unknown type {shown(kind)}",
                   f"use one of {', '.join(TYPES)} (int/float take min, max, above; choice takes choices = [...])")
    text = lambda key, fix: expect(source, at(key), raw[key], str, fix) if key in raw else None  # noqa: E731
    spec = KnobSpec(
        name=name, type=kind, source=source,
        help=text("help", 'help = "what it does, in one line"') or f"declared in {source}",
        unit=text("unit", 'unit = "tokens"') or "",
        none_means=text("none_means", 'none_means = "the server\'s default"') or KnobSpec.none_means,
        unsupported=text("unsupported", 'unsupported = "why no server of this kind has it"'),
        report_as=text("report_as", 'report_as = "window_size"'),
        at_least=text("at_least", f'at_least = "{BLOCK_SIZE}" (another knob\'s name)'),
        pinned=expect(source, at("pinned"), raw.get("pinned", False), bool, "pinned = true"),
        nullable=expect(source, at("none"), raw.get("none", True), bool, "none = false (a value is required)"),
        requires=tuple(_names(source, at("requires"), raw.get("requires", []))),
        choices=_choices(source, at("choices"), kind, raw),
        **_bounds(source, where, kind, raw),
        routes=_routes(source, where, name, raw),
        verify=_verify(source, at("verify"), kind, raw.get("verify")),
        engine=text("engine", 'engine = "llamacpp" (or "sglang", the default)') or KnobSpec.engine,
    )
    if spec.at_least is not None and kind not in ("int", "float"):
        raise fail(source, at("at_least"), f"applies to int and float knobs, not {kind}", "remove at_least")
    if "default" in raw:
        spec = replace(spec, default=spec.parse(raw["default"], f"{source}: {at('default')}"))
    if "example" in raw:
        spec = replace(spec, example=spec.parse(raw["example"], f"{source}: {at('example')}"))
    if not spec.nullable and spec.default is None:
        raise fail(source, at("default"), "a knob that cannot be none needs a default", "default = 8, or none = true")
    return spec


def _names(source: str, where: str, value: Any) -> list[str]:
    fix = 'requires = ["window"]'
    return [expect(source, f"{where}[{i}]", v, str, fix) for i, v in enumerate(expect(source, where, value, list, fix))]


def _choices(source: str, where: str, kind: str, raw: dict) -> tuple[str, ...]:
    if kind != "choice":
        if "choices" in raw:
            raise fail(source, where, f"only a choice knob has choices (this one is {kind})",
                       'remove choices, or type = "choice"')
        return ()
    if "choices" not in raw:
        raise fail(source, where, "missing: a choice knob lists its choices", 'choices = ["fa3", "flashinfer"]')
    values = _names(source, where, raw["choices"])
    if not values or any(not v.strip() for v in values):
        raise fail(source, where, "needs at least one non-empty choice", 'choices = ["fa3", "flashinfer"]')
    return tuple(values)


def _bounds(source: str, where: str, kind: str, raw: dict) -> dict[str, float | None]:
    given = {k: raw[k] for k in ("min", "max", "above") if k in raw}
    if given and kind not in ("int", "float"):
        raise fail(source, f"{where} {sorted(given)[0]}", f"bounds apply to int and float knobs, not {kind}",
                   f"remove {', '.join(sorted(given))}")
    number = int if kind == "int" else float
    out = {k: expect(source, f"{where} {k}", v, number, f"{k} = 1") for k, v in given.items()}
    low, high = out.get("min", out.get("above")), out.get("max")
    if "min" in out and "above" in out:
        raise fail(source, f"{where} above", "give min (inclusive) or above (exclusive), not both", "remove one")
    if low is not None and high is not None and (low > high or ("above" in out and low == high)):
        lo_key = "min" if "min" in out else "above"
        raise fail(source, f"{where} {lo_key}", f"the bounds are reversed: {lo_key} = {low} is above max = {high}",
                   f"swap them: {lo_key} = {high}, max = {low}")
    return {"minimum": out.get("min"), "above": out.get("above"), "maximum": out.get("max")}


def _version(source: str, where: str, value: Any) -> str:
    text = expect(source, where, value, str, f'{where.split()[-1]} = "0.5.14"')
    if not _VERSION.fullmatch(text.strip()):
        raise fail(source, where, f"{shown(text)} is not an SGLang version", f'{where.split()[-1]} = "0.5.14"')
    return text.strip()


def _route(source: str, where: str, knob: str, raw: dict, from_knob: bool = False) -> DataRoute:
    if ("flag" in raw) == ("env" in raw):
        problem = "needs exactly one of flag or env" if not from_knob else "needs a flag or an env var (exactly one)"
        raise fail(source, where, problem, _ROUTE_FIX)
    flag = expect(source, f"{where} flag", raw["flag"], str, _ROUTE_FIX) if "flag" in raw else None
    if flag is not None and (not flag.startswith("--") or len(flag) < 3 or " " in flag):
        raise fail(source, f"{where} flag", f"{shown(flag)} is not a long flag", f'flags start with "--"; {_ROUTE_FIX}')
    env = expect(source, f"{where} env", raw["env"], str, _ROUTE_FIX) if "env" in raw else None
    if env is not None and (not env or "=" in env or " " in env):
        raise fail(source, f"{where} env", f"{shown(env)} is not an environment variable name",
                   'write the name only: env = "SGLANG_ENABLE_SPEC_V2" (the value is the knob\'s)')
    switch = expect(source, f"{where} switch", raw["switch"], str, 'switch = "--enable-x"') if "switch" in raw else None
    if switch is not None and not switch.startswith("--"):
        raise fail(source, f"{where} switch", f"{shown(switch)} is not a long flag", 'switch = "--enable-x"')
    versions = {k: _version(source, f"{where} {k}", raw[k]) for k in ("since", "until") if k in raw}
    if len(versions) == 2 and version_key(versions["since"]) > version_key(versions["until"]):
        raise fail(source, f"{where} since", f"since {versions['since']} is after until {versions['until']}",
                   f'swap them: since = "{versions["until"]}", until = "{versions["since"]}"')
    route = KnobRoute(
        knob=knob, flag=flag, env=env, switch=switch,
        offset=expect(source, f"{where} offset", raw.get("offset", 0), int, "offset = 1"),
        algorithm=expect(source, f"{where} algorithm", raw["algorithm"], str, 'algorithm = "DFLASH"')
        if "algorithm" in raw else None,
        source=expect(source, f"{where} source", raw.get("source", source), str, 'source = "SGLang 0.5.12+"'))
    help_has = raw.get("when_help_has", flag)
    if help_has is not None:
        help_has = expect(source, f"{where} when_help_has", help_has, str, 'when_help_has = "--a-flag"')
        if not help_has.startswith("--"):
            raise fail(source, f"{where} when_help_has", f"{shown(help_has)} is not a long flag",
                       'when_help_has = "--a-flag-the-server-lists-in---help"')
    return DataRoute(route, help_has, versions.get("since"), versions.get("until"))


def _routes(source: str, where: str, knob: str, raw: dict) -> tuple[DataRoute, ...]:
    short = {k: raw[k] for k in ("flag", "env", "since", "until", "offset", "switch", "algorithm", "when_help_has")
             if k in raw}
    if "route" in raw:
        if short:
            raise fail(source, f"{where} {sorted(short)[0]}", "give it inside each route, not beside route = [...]",
                       'route = [{ flag = "--a", since = "0.5.12" }]')
        entries = expect(source, f"{where} route", raw["route"], list, _ROUTE_FIX)
        if not entries:
            raise fail(source, f"{where} route", "is empty", _ROUTE_FIX)
        out = []
        for i, entry in enumerate(entries):
            at = f"{where} route[{i}]"
            expect(source, at, entry, dict, _ROUTE_FIX)
            unknown = sorted(set(entry) - _ROUTE_FIELDS)
            if unknown:
                raise fail(source, f"{at} {key_name(unknown[0])}", "unknown field",
                           f"a route takes {', '.join(sorted(_ROUTE_FIELDS))}")
            out.append(_route(source, at, knob, entry))
        return tuple(out)
    return (_route(source, where, knob, short, from_knob=True),)


def _verify(source: str, where: str, kind: str, raw: Any) -> tuple[VerifySource, ...]:
    if raw is None:
        raise fail(source, where, "missing: say how the server reports it", _VERIFY_FIX)
    if raw == "unverifiable":
        return ()
    entries = [raw] if isinstance(raw, dict) else raw
    if not isinstance(entries, list) or not entries:
        raise fail(source, where, f"expected a table, a list of tables or \"unverifiable\", got {shown(raw)}",
                   _VERIFY_FIX)
    out = []
    for i, entry in enumerate(entries):
        at = where if isinstance(raw, dict) else f"{where}[{i}]"
        expect(source, at, entry, dict, _VERIFY_FIX)
        unknown = sorted(set(entry) - _VERIFY_FIELDS)
        if unknown:
            raise fail(source, f"{at} {key_name(unknown[0])}", "unknown field",
                       f"a verify source takes {', '.join(sorted(_VERIFY_FIELDS))}")
        if ("log" in entry) == ("server_info" in entry):
            raise fail(source, at, "needs exactly one of log or server_info", _VERIFY_FIX)
        if "log" in entry and "field" not in entry:
            raise fail(source, f"{at} field", "missing: which key=value of the log line", 'field = "draft_window_size"')
        negate = expect(source, f"{at} negate", entry.get("negate", False), bool, "negate = true")
        if negate and kind != "bool":
            raise fail(source, f"{at} negate", f"only a bool knob can be reported inverted (this one is {kind})",
                       "remove negate")
        strings = {k: expect(source, f"{at} {k}", entry[k], str, f'{k} = "..."') for k in ("log", "field",
                   "server_info", "label") if k in entry}
        if any(not v.strip() for v in strings.values()):
            raise fail(source, at, "has an empty string", _VERIFY_FIX)
        out.append(VerifySource(server_info=strings.get("server_info"), marker=strings.get("log"),
                                field=strings.get("field"), label=strings.get("label"), negate=negate))
    return tuple(out)


@dataclass(frozen=True)
class KnobTable:
    """Every declared knob, in declaration order: the shipped ones, then a config's (which may
    replace a shipped one by name). A [knobs.map] knob nobody declared gets the generic spec."""

    specs: Mapping[str, KnobSpec] = field(default_factory=dict)
    # the settings verification checks on every start, requested or not (the engine's, flavours.toml)
    base: tuple[str, ...] = ("window_size", "compact_cache", "block_size", "budget")

    def spec(self, name: str, route: KnobRoute | None = None) -> KnobSpec:
        found = self.specs.get(name)
        return found if found is not None else generic_spec(name, route)

    def known(self, knob_map: Mapping[str, Any]) -> tuple[str, ...]:
        """Every knob a config can set: the table's, then its own [knobs.map] knobs."""
        return (*self.specs, *(name for name in knob_map if name not in self.specs))

    def defaults(self) -> dict[str, KnobValue]:
        """The knobs every config lists before it sets any: pinned ones and those with a default."""
        return {s.name: s.default for s in self.specs.values() if s.pinned or s.default is not None}

    def listed(self, knobs: Mapping[str, KnobValue]) -> dict[str, KnobValue]:
        """``knobs`` without the cleared ones that are cleared by default and not pinned: an unset
        knob adds nothing to a launch (so nothing to its hash or the status lines)."""
        out = {}
        for name, value in knobs.items():
            spec = self.specs.get(name)
            if value is None and (spec is None or (not spec.pinned and spec.default is None)):
                continue
            out[name] = value
        return out

    def for_effective_key(self, key: str) -> str:
        """The knob a server-reported key belongs to (window_size -> window); a derived setting keeps its key."""
        return next((s.name for s in self.specs.values() if s.effective_key == key), key)

    def log_markers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.marker for s in self.specs.values() for v in s.verify if v.marker))

    def extended(self, specs: Iterable[KnobSpec]) -> KnobTable:
        """This table with ``specs`` added (or replacing the same names); cross-knob names checked."""
        merged = dict(self.specs)
        merged.update({s.name: s for s in specs})
        for spec in merged.values():
            for key, names in (("at_least", (spec.at_least,) if spec.at_least else ()), ("requires", spec.requires)):
                for other in names:
                    if other not in merged:
                        raise ConfigError(f"{spec.source}: [knob.{spec.name}] {key}: no knob named {other!r}",
                                          hint=f"name a declared knob: {', '.join(merged)}")
        return KnobTable(merged, self.base)


def read_declarations(source: str, section: Any) -> tuple[KnobSpec, ...]:
    """The ``[knob]`` section of a file: one spec per ``[knob.NAME]`` table."""
    expect(source, "[knob]", section, dict, '[knob.my_knob] then type = "int" and flag = "--my-flag"')
    return tuple(declare(name, raw, source) for name, raw in section.items())

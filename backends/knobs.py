"""Knobs as data: the one table of knobs (``KNOBS``: name, the key the server reports it under,
parser, unit, help) and how each knob reaches this server (the flag or env var, and the launch argv).

Every reader takes its knob facts from here: config and preset parsing, ``--set``, the console's
editor, launch planning, verification and sweep plans. A knob from ``[knobs.map]`` that is not in
the table gets a generic spec (any scalar; the server never reports it back).

Pure: ``plan_launch(config, help_text, prefix)`` turns a validated ServerConfig plus the server's
``--help`` text into a LaunchPlan (argv, env, routes). The routes come from presets/flavours.toml
(first match whose flag the help offers) unless ``[knobs.map]`` overrides them. A knob the server
cannot take is a ConfigError here, before any restart.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from backends.errors import ConfigError
from backends.fields import expect, fail, key_name, shown
from backends.paths import PRESETS_DIR

if TYPE_CHECKING:
    from backends.config import ServerConfig

KnobValue = int | str | bool | None  # None means "none": the knob is cleared (no flag, no env var)
SERVER_DEFAULT = "the server's default"
DEFAULT_BLOCK_SIZE = 16  # SGLang's fallback when neither the flags nor the draft config give one


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



def knob_text(value: Any) -> str:
    """A knob value as the user writes it: ``none`` for None (what --set and the TOML take)."""
    return "none" if value is None else str(value)

@dataclass(frozen=True)
class KnobSpec:
    """One knob: its name, the key the server reports its value under (None: it never says), how a
    value is read (a positive integer, or any scalar for a user's knob), its unit and one help line."""

    name: str
    effective_key: str | None
    unit: str
    help: str
    integer: bool = True                 # a positive integer; False: an integer, a string or true/false
    default: KnobValue = None            # the value before any config, preset or --set
    none_means: str = SERVER_DEFAULT     # what clearing the knob ("none") leaves the server running
    example: int = 8                     # a value hints suggest: valid wherever the knob is
    at_least_block: bool = False         # SGLang refuses a value below the block size (the window)

    @property
    def unset_is_default(self) -> bool:
        """Cleared means the server picks: whatever it reports then is not a mismatch."""
        return self.none_means == SERVER_DEFAULT

    def value_hint(self, block_size: int | None = None) -> str:
        """The fix for a bad value, suggesting one the server takes (a window at least the block size)."""
        if not self.integer:
            return f'{key_name(self.name)} = 8, = "text", = true, or = "none" to clear it'
        if self.at_least_block:
            block = block_size or DEFAULT_BLOCK_SIZE
            return (f"set {self.name} = {max(self.example, block)} (an integer >= the block size, {block}), "
                    f"or {self.name} = \"none\"")
        return f"set {self.name} = {self.example} (any integer > 0), or {self.name} = \"none\" to clear it"

    def parse(self, raw: Any, source: str = "--set", block_size: int | None = None) -> KnobValue:
        """Text (``--set``, the editor) or a TOML value -> the typed value; "none" clears the knob.
        ConfigError names ``source``, the knob and the fix (with ``block_size`` when known: the
        editor's). true/false is never a number here."""
        where = f"knob '{key_name(self.name)}'"
        if isinstance(raw, str):
            text = raw.strip()
            if text.lower() == "none":
                return None
            if text.lower() in ("true", "false"):
                raw = text.lower() == "true"
            else:
                try:
                    raw = int(text)
                except ValueError:
                    raw = text
        if self.integer:
            count = as_count(raw)
            if count is None or count <= 0:
                raise fail(source, where, f"expected a positive integer or \"none\", got {shown(raw)}",
                           self.value_hint(block_size))
            return count
        if isinstance(raw, float):
            raise fail(source, where, f"expected an integer, string or true/false, got {shown(raw)}",
                       f"write {key_name(self.name)} = {int(raw) if math.isfinite(raw) else 1} or quote it")
        return expect(source, where, raw, (int, str, bool), self.value_hint())

    def describe(self) -> str:
        """One line for --help and the editor: what it is, its unit, what "none" means."""
        unit = f" [{self.unit}]" if self.unit else ""
        return f"{self.help}{unit}; none = {self.none_means}"


KNOBS: dict[str, KnobSpec] = {spec.name: spec for spec in (
    KnobSpec("budget", effective_key="budget", unit="tree nodes", example=8,
             help="DDTree tree budget: drafted nodes verified per step (DDTree builds only)"),
    KnobSpec("topk", effective_key=None, unit="candidates", example=4,
             help="DDTree top-k: draft candidates each tree node may branch into"),
    KnobSpec("window", effective_key="window_size", unit="tokens", default=2048, example=2048,
             at_least_block=True, help="DFlash draft window: recent tokens the draft's KV cache keeps",
             none_means="a full-context draft cache"),
)}
DEFAULT_KNOBS: dict[str, KnobValue] = {spec.name: spec.default for spec in KNOBS.values()}


def knob_spec(name: str, route: KnobRoute | None = None) -> KnobSpec:
    """The table's spec, or the generic one of a user's knob (any scalar, never reported back)."""
    spec = KNOBS.get(name)
    if spec is not None:
        return spec
    how = (f"passed as {route.flag}" if route.flag else f"passed as env {route.env}") if route else "a [knobs.map] knob"
    return KnobSpec(name, effective_key=None, unit="", help=how, integer=False)


def known_knobs(knob_map: Mapping[str, Any]) -> tuple[str, ...]:
    """Every knob a config can set: the table's, then its own [knobs.map] knobs."""
    return (*KNOBS, *(name for name in knob_map if name not in KNOBS))


def knob_for_effective_key(key: str) -> str:
    """The knob a server-reported key belongs to (window_size -> window); a derived setting keeps its key."""
    return next((spec.name for spec in KNOBS.values() if spec.effective_key == key), key)


def as_count(value: KnobValue) -> int | None:
    """``value`` when it is an integer (true/false are not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def window_too_small(knobs: Mapping[str, KnobValue], block_size: int) -> bool:
    """SGLang refuses a draft window smaller than the block size (--speculative-num-draft-tokens)."""
    window = as_count(knobs.get("window"))
    return window is not None and window < block_size


FLAVOURS_FILE = PRESETS_DIR / "flavours.toml"
_FLAG_RE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)")
_BLOCK_FLAGS = ("--speculative-num-draft-tokens", "--speculative-dflash-block-size")


@dataclass(frozen=True)
class DataRoute:
    route: KnobRoute
    when_help_has: str


@dataclass(frozen=True)
class LaunchPlan:
    """What to run: argv and env, how each knob travels, and what the server should then report."""

    argv: tuple[str, ...]
    env: dict[str, str]
    routes: dict[str, KnobRoute]
    algorithm: str | None
    block_size: int
    expected: dict[str, object] = field(default_factory=dict)


def help_flags(help_text: str) -> frozenset[str]:
    """Every long flag mentioned in an argparse ``--help`` text."""
    return frozenset(_FLAG_RE.findall(help_text))


@lru_cache(maxsize=1)
def _load_flavours() -> tuple[tuple[DataRoute, ...], dict[str, str]]:
    with FLAVOURS_FILE.open("rb") as fh:
        data = tomllib.load(fh)
    routes = []
    for raw in data.get("route", []):
        route = KnobRoute(knob=raw["knob"], flag=raw.get("flag"), env=raw.get("env"),
                          offset=int(raw.get("offset", 0)), switch=raw.get("switch"),
                          algorithm=raw.get("algorithm"), source=raw.get("source", str(FLAVOURS_FILE)))
        routes.append(DataRoute(route, raw["when_help_has"]))
    return tuple(routes), dict(data.get("unsupported", {}))


def data_routes() -> tuple[DataRoute, ...]:
    return _load_flavours()[0]


def _arg_value(args: tuple[str, ...], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def resolve_routes(config: ServerConfig, flags: frozenset[str], version: str = "?") -> dict[str, KnobRoute]:
    """The route for every knob that has a value; ConfigError for one the server cannot take."""
    routes: dict[str, KnobRoute] = {}
    unsupported = _load_flavours()[1]
    for knob, value in config.knobs.items():
        if value is None or value is False:
            continue  # cleared: nothing to pass
        route = config.knob_map.get(knob)
        if route is not None:
            if route.flag and flags and route.flag not in flags:
                raise ConfigError(
                    f"{config.source}: [knobs.map] {knob}: the server (SGLang {version}) has no flag {route.flag}",
                    hint=f"check '{config.python} -m sglang.launch_server --help', fix the mapping, "
                         f"or clear it: --set {knob}=none")
        else:
            route = next((d.route for d in data_routes() if d.route.knob == knob and d.when_help_has in flags), None)
        if route is None:
            why = unsupported.get(knob, "no flag or env var for it is known for this server")
            raise ConfigError(
                f"knob '{knob}' = {value!r} cannot be passed to this server (SGLang {version}): {why}",
                hint=f'clear it (--set {knob}=none, or {knob} = "none" in [knobs]), or map it in {config.source}: '
                f'[knobs.map] {knob} = {{ flag = "--..." }} or {{ env = "..." }}',
            )
        routes[knob] = route
    return routes


def _block_size(config: ServerConfig, routes: dict[str, KnobRoute]) -> tuple[int, bool]:
    """(block size, whether it was set explicitly) - else SGLang takes it from the draft config."""
    budget_route = routes.get("budget")
    if budget_route is not None and budget_route.flag in _BLOCK_FLAGS:
        return int(config.knobs["budget"]) + budget_route.offset, True  # type: ignore[arg-type]
    if config.block_size:
        return config.block_size, False  # the draft model's block size, for validation only
    for flag in _BLOCK_FLAGS:
        value = _arg_value(config.extra_args, flag)
        if value is not None and value.isdigit():
            return int(value), True
    return DEFAULT_BLOCK_SIZE, False


def _algorithm(config: ServerConfig, routes: dict[str, KnobRoute]) -> str | None:
    wanted = {r.algorithm.upper() for r in routes.values() if r.algorithm}
    if len(wanted) > 1:
        raise ConfigError(
            f"knobs need different speculative algorithms: {sorted(wanted)}",
            hint="clear one of the knobs or fix [knobs.map] algorithm",
        )
    given = _arg_value(config.extra_args, "--speculative-algorithm")
    if wanted:
        need = wanted.pop()
        if given and given.upper() != need:
            knobs = ", ".join(k for k, r in routes.items() if r.algorithm)
            raise ConfigError(
                f"{config.source}: [server] extra_args: --speculative-algorithm {given} conflicts with the knobs "
                f"({knobs}), which need --speculative-algorithm {need} on this server",
                hint="drop --speculative-algorithm from extra_args (ddtune sets it), or clear those knobs",
            )
        return need
    if given:
        return given
    return "DFLASH" if config.draft_model else None


def plan_launch(config: ServerConfig, help_text: str, prefix: tuple[str, ...], version: str = "?") -> LaunchPlan:
    """The full launch: ``prefix`` (e.g. python -m sglang.launch_server) plus model, port, knobs, extras."""
    flags = help_flags(help_text)
    routes = resolve_routes(config, flags, version)
    block_size, block_explicit = _block_size(config, routes)
    window = config.knobs.get("window")
    if window_too_small(config.knobs, block_size):
        raise ConfigError(
            f"knob 'window' = {window} is smaller than the block size {block_size}; SGLang refuses it "
            f"(--speculative-draft-window-size must be >= --speculative-num-draft-tokens)",
            hint=f'use window >= {block_size}, or window = "none" for a full-context draft cache',
        )
    algorithm = _algorithm(config, routes)
    argv: list[str] = [*prefix, "--model-path", config.model, "--host", config.host, "--port", str(config.port)]
    if algorithm and _arg_value(config.extra_args, "--speculative-algorithm") is None:
        argv += ["--speculative-algorithm", algorithm]
    if config.draft_model and _arg_value(config.extra_args, "--speculative-draft-model-path") is None:
        argv += ["--speculative-draft-model-path", config.draft_model]
    env = dict(config.env)
    switches: list[str] = []
    for knob, route in routes.items():
        value = config.knobs[knob]
        if route.switch and route.switch not in switches:
            switches.append(route.switch)
        if value is True:
            if route.flag:
                argv.append(route.flag)
            else:
                env[route.env] = "1"  # type: ignore[index]
            continue
        text = str(value + route.offset) if isinstance(value, int) else str(value)
        if route.flag:
            if _arg_value(config.extra_args, route.flag) is not None:
                raise ConfigError(
                    f"{config.source}: [server] extra_args sets {route.flag}, which knob '{knob}' also sets",
                    hint=f"remove {route.flag} from extra_args and use the knob (--set {knob}=...)",
                )
            argv += [route.flag, text]
        else:
            env[route.env] = text  # type: ignore[index]
    argv += switches
    argv += list(config.extra_args)
    expected = expected_reports(config.knobs, block_size if block_explicit else None)
    return LaunchPlan(
        argv=tuple(argv), env=env, routes=routes, algorithm=algorithm, block_size=block_size, expected=expected
    )


def expected_reports(knobs: Mapping[str, KnobValue], block_size: int | None) -> dict[str, Any]:
    """What the server should report once it runs ``knobs``, keyed as verification reads it: each
    reported knob under its effective key, plus the settings the window and block size decide."""
    expected: dict[str, Any] = {
        spec.effective_key: as_count(knobs.get(spec.name)) for spec in KNOBS.values() if spec.effective_key
    }
    expected["compact_cache"] = as_count(knobs.get("window")) is not None
    expected["block_size"] = block_size
    return expected


def plan_for_endpoint(config: ServerConfig) -> LaunchPlan:
    """What an endpoint should report for our knobs (no --help to read: any route is accepted)."""
    return LaunchPlan(
        argv=(), env={}, routes={}, algorithm=None, block_size=0, expected=expected_reports(config.knobs, None)
    )

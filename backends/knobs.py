"""Knob mapping as data: which flag or env var carries each knob to this server, and the launch argv.

Pure: ``plan_launch(config, help_text, prefix)`` turns a validated ServerConfig plus the server's
``--help`` text into a LaunchPlan (argv, env, routes). The routes come from presets/flavours.toml
(first match whose flag the help offers) unless ``[knobs.map]`` overrides them. A knob the server
cannot take is a ConfigError here, before any restart.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache

from backends.config import KnobRoute, ServerConfig
from backends.errors import ConfigError
from backends.paths import PRESETS_DIR

FLAVOURS_FILE = PRESETS_DIR / "flavours.toml"
DEFAULT_BLOCK_SIZE = 16  # SGLang's fallback when neither the flags nor the draft config give one
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
                    hint=f"check '{config.python} -m sglang.launch_server --help', fix the mapping, or clear it: --set {knob}=none")
        else:
            route = next((d.route for d in data_routes() if d.route.knob == knob and d.when_help_has in flags), None)
        if route is None:
            why = unsupported.get(knob, "no flag or env var for it is known for this server")
            raise ConfigError(
                f"knob '{knob}' = {value!r} cannot be passed to this server (SGLang {version}): {why}",
                hint=f"clear it (--set {knob}=none, or {knob} = \"none\" in [knobs]), or map it in {config.source}: "
                     f'[knobs.map] {knob} = {{ flag = "--..." }} or {{ env = "..." }}')
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
        raise ConfigError(f"knobs need different speculative algorithms: {sorted(wanted)}",
                          hint="clear one of the knobs or fix [knobs.map] algorithm")
    given = _arg_value(config.extra_args, "--speculative-algorithm")
    if wanted:
        need = wanted.pop()
        if given and given.upper() != need:
            knobs = ", ".join(k for k, r in routes.items() if r.algorithm)
            raise ConfigError(
                f"{config.source}: [server] extra_args: --speculative-algorithm {given} conflicts with the knobs "
                f"({knobs}), which need --speculative-algorithm {need} on this server",
                hint="drop --speculative-algorithm from extra_args (ddtune sets it), or clear those knobs")
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
    if isinstance(window, int) and not isinstance(window, bool) and window < block_size:
        raise ConfigError(
            f"knob 'window' = {window} is smaller than the block size {block_size}; SGLang refuses it "
            f"(--speculative-draft-window-size must be >= --speculative-num-draft-tokens)",
            hint=f"use window >= {block_size}, or window = \"none\" for a full-context draft cache")
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
                    hint=f"remove {route.flag} from extra_args and use the knob (--set {knob}=...)")
            argv += [route.flag, text]
        else:
            env[route.env] = text  # type: ignore[index]
    argv += switches
    argv += list(config.extra_args)
    expected = {
        "window_size": window if isinstance(window, int) and not isinstance(window, bool) else None,
        "compact_cache": isinstance(window, int) and not isinstance(window, bool),
        "block_size": block_size if block_explicit else None,
        "budget": config.knobs.get("budget") if "budget" in routes else None,
    }
    return LaunchPlan(argv=tuple(argv), env=env, routes=routes, algorithm=algorithm,
                      block_size=block_size, expected=expected)


def plan_for_endpoint(config: ServerConfig) -> LaunchPlan:
    """What an endpoint should report for our knobs (no --help to read: any route is accepted)."""
    window = config.knobs.get("window")
    has_window = isinstance(window, int) and not isinstance(window, bool)
    return LaunchPlan(argv=(), env={}, routes={}, algorithm=None, block_size=0, expected={
        "window_size": window if has_window else None, "compact_cache": has_window,
        "block_size": None, "budget": config.knobs.get("budget")})

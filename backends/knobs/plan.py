"""Knobs as data: the one table of knobs (``SHIPPED``, declared in presets/flavours.toml; a config's
``[knob.NAME]`` tables extend it as ``config.knob_table``) and how each knob reaches this server
(the flag or env var, and the launch argv).

Every reader takes its knob facts from the table: config and preset parsing, ``--set``, the
console's editor, launch planning, verification, status and sweep plans. A knob from
``[knobs.map]`` that nobody declared gets a generic spec (any scalar; the server never reports it).

Pure: ``plan_launch(config, help_text, prefix)`` turns a validated ServerConfig plus the server's
``--help`` text into a LaunchPlan (argv, env, routes). The routes are the declared ones (first
match the help and version admit) unless ``[knobs.map]`` overrides them. A knob the server cannot
take, or a cross-knob rule broken (window >= block size, a required knob unset, two knobs on one
flag), is a ConfigError here, before any restart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backends.core.errors import ConfigError
from backends.knobs.decl import KnobTable
from backends.knobs.engine import Engine, engine as engine_of
from backends.knobs.shipped import DEFAULT_KNOBS, KNOBS, SHIPPED
from backends.knobs.spec import (BLOCK_SIZE, DEFAULT_BLOCK_SIZE, SERVER_DEFAULT, DataRoute, KnobRoute, KnobSpec,
                                 KnobValue, as_count, knob_text)

if TYPE_CHECKING:
    from backends.knobs.config import ServerConfig

__all__ = ["BLOCK_SIZE", "DEFAULT_BLOCK_SIZE", "DEFAULT_KNOBS", "KNOBS", "SERVER_DEFAULT", "SHIPPED", "DataRoute",
           "KnobRoute", "KnobSpec", "KnobTable", "KnobValue", "as_count", "knob_text"]

_FLAG_RE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)")
_BLOCK_FLAGS = ("--speculative-num-draft-tokens", "--speculative-dflash-block-size")


def knob_spec(name: str, route: KnobRoute | None = None, table: KnobTable | None = None) -> KnobSpec:
    """The table's spec (the shipped table unless given), or the generic one of a [knobs.map] knob."""
    return (table or SHIPPED).spec(name, route)


def known_knobs(knob_map: Mapping[str, Any], table: KnobTable | None = None) -> tuple[str, ...]:
    return (table or SHIPPED).known(knob_map)


def knob_for_effective_key(key: str, table: KnobTable | None = None) -> str:
    return (table or SHIPPED).for_effective_key(key)


def cross_knob_errors(knobs: Mapping[str, KnobValue], table: KnobTable, block_size: int) -> dict[str, str]:
    """The declared rules between knobs, broken: knob -> what is wrong (short, for the editor).
    ``at_least = "block_size"`` compares with ``block_size``, the block size the server will use."""
    errors: dict[str, str] = {}
    for name, value in knobs.items():
        spec = table.spec(name)
        if value is None:
            continue
        if spec.at_least and isinstance(value, int | float) and not isinstance(value, bool):
            floor = block_size if spec.at_least == BLOCK_SIZE else as_count(knobs.get(spec.at_least))
            if floor is not None and value < floor:
                what = "the block size" if spec.at_least == BLOCK_SIZE else f"{spec.at_least}"
                errors[name] = f"must be >= {floor} ({what}), or none"
        missing = [other for other in spec.requires if knobs.get(other) is None]
        if missing:
            errors[name] = f"needs {' and '.join(missing)} set too, or {name} = none"
    return errors


def window_too_small(knobs: Mapping[str, KnobValue], block_size: int, table: KnobTable | None = None) -> bool:
    """SGLang refuses a draft window smaller than the block size (--speculative-num-draft-tokens)."""
    window = as_count(knobs.get("window"))
    return window is not None and "window" in cross_knob_errors({"window": window}, table or SHIPPED, block_size)


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


def _arg_value(args: tuple[str, ...], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _passes_something(value: KnobValue, route: KnobRoute | None, spec: KnobSpec) -> bool:
    """None passes nothing; false passes nothing through a switch flag, but "0" through a typed env var."""
    if value is None:
        return False
    return value is not False or (spec.type == "bool" and route is not None and route.env is not None)


def _pick_route(spec: KnobSpec, flags: frozenset[str], version: str) -> tuple[KnobRoute | None, list[str]]:
    known = version if version not in ("?", "unknown", "") else None
    why: list[str] = []
    for data in spec.routes:
        reason = data.why_not(flags, known)
        if reason is None:
            return data.route, why
        why.append(reason)
    return None, why


def resolve_routes(config: ServerConfig, flags: frozenset[str], version: str = "?") -> dict[str, KnobRoute]:
    """The route for every knob that has a value; ConfigError for one the server cannot take."""
    routes: dict[str, KnobRoute] = {}
    table = config.knob_table
    label = engine_of(config.engine).label
    for knob, value in config.knobs.items():
        spec = table.spec(knob, config.knob_map.get(knob))
        route = config.knob_map.get(knob)
        if route is None and spec.routes:
            if not _passes_something(value, spec.routes[0].route, spec):
                continue
            route, why = _pick_route(spec, flags, version)
        else:
            if not _passes_something(value, route, spec):
                continue  # cleared: nothing to pass
            why = []
        if route is not None and knob in config.knob_map and route.flag and flags and route.flag not in flags:
            raise ConfigError(
                f"{config.source}: [knobs.map] {knob}: the server ({label} {version}) has no flag {route.flag}",
                hint=f"check '{config.python} -m sglang.launch_server --help', fix the mapping, "
                     f"or clear it: --set {knob}=none")
        if route is None:
            reason = spec.unsupported or "no flag or env var for it is known for this server"
            detail = f" ({'; '.join(why)})" if why and not spec.unsupported else ""
            raise ConfigError(
                f"knob '{knob}' = {knob_text(value)} cannot be passed to this server ({label} {version}): "
                f"{reason}{detail}",
                hint=f'clear it (--set {knob}=none, or {knob} = "none" in [knobs]), or map it in {config.source}: '
                f'[knobs.map] {knob} = {{ flag = "--..." }} or {{ env = "..." }}',
            )
        routes[knob] = route
    _one_knob_per_flag(routes)
    return routes


def _one_knob_per_flag(routes: dict[str, KnobRoute]) -> None:
    seen: dict[str, str] = {}
    for knob, route in routes.items():
        where = route.flag or route.env or ""
        if where in seen:
            raise ConfigError(f"knobs '{seen[where]}' and '{knob}' both set {where} on this server",
                              hint=f"clear one of them: --set {knob}=none")
        seen[where] = knob


def _block_size(config: ServerConfig, routes: dict[str, KnobRoute]) -> tuple[int, bool]:
    """(block size, whether it was set explicitly) - else SGLang takes it from the draft config."""
    for knob, route in routes.items():
        value = as_count(config.knobs.get(knob))
        if route.flag in _BLOCK_FLAGS and value is not None:
            return value + route.offset, True
    if config.block_size:
        return config.block_size, False  # the draft model's block size, for validation only
    for flag in _BLOCK_FLAGS:
        given = _arg_value(config.extra_args, flag)
        if given is not None and given.isdigit():
            return int(given), True
    return DEFAULT_BLOCK_SIZE, False


def _check_rules(config: ServerConfig, block_size: int) -> None:
    table = config.knob_table
    for name, problem in cross_knob_errors(config.knobs, table, block_size).items():
        spec = table.spec(name)
        value = knob_text(config.knobs[name])
        if spec.at_least == BLOCK_SIZE:
            raise ConfigError(
                f"knob '{name}' = {value} is smaller than the block size {block_size}; SGLang refuses it "
                f"(--speculative-draft-window-size must be >= --speculative-num-draft-tokens)",
                hint=f'use {name} >= {block_size}, or {name} = "none" ({spec.none_means})')
        raise ConfigError(f"knob '{name}' = {value} {problem.replace(f', or {name} = none', '')}",
                          hint=f"set {' and '.join(spec.requires) or spec.at_least}, or --set {name}=none")


def _algorithm(config: ServerConfig, routes: dict[str, KnobRoute], eng: Engine) -> str | None:
    wanted = {r.algorithm.upper() for r in routes.values() if r.algorithm}
    if len(wanted) > 1:
        raise ConfigError(
            f"knobs need different speculative algorithms: {sorted(wanted)}",
            hint="clear one of the knobs or fix [knobs.map] algorithm",
        )
    given = _arg_value(config.extra_args, eng.algorithm_flag)
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
    return eng.algorithm if config.draft_model else None


def _value_text(value: KnobValue, route: KnobRoute) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value + route.offset) if isinstance(value, int) else str(value)


_SPEC_ON_FLAGS = ("--speculative-algorithm", "--speculative-draft-model-path")


def speculation_on(config: ServerConfig) -> bool:
    """A draft model, or extra_args that turn speculative decoding on themselves."""
    eng = engine_of(config.engine)
    on = (*_SPEC_ON_FLAGS, eng.algorithm_flag, *eng.draft_flags)
    return bool(config.draft_model) or any(a.split("=", 1)[0] in on for a in config.extra_args)


def _drafts(route: KnobRoute) -> bool:
    """The route sets something only speculative decoding reads (a --speculative-* flag, DDTree's or
    spec v2's env var, or it needs a speculative algorithm)."""
    return bool(route.algorithm) or (route.flag or "").startswith(("--speculative-", "--spec-")) \
        or (route.switch or "").startswith("--speculative-") \
        or (route.env or "").startswith(("SGLANG_DDTREE", "SGLANG_ENABLE_SPEC"))


def without_draft_knobs(config: ServerConfig) -> ServerConfig:
    """A speculation-off server (no draft model; what ``sweep --baseline`` and docs/lossless.md run)
    with its draft knobs cleared: the window's default 2048 must not become
    --speculative-draft-window-size on a server that drafts nothing. Other knobs pass as usual."""
    if speculation_on(config):
        return config
    cleared: dict[str, KnobValue] = {}
    for knob in config.knobs:
        mapped = config.knob_map.get(knob)
        routes = [mapped] if mapped else [r.route for r in config.knob_table.spec(knob).routes]
        if any(_drafts(r) for r in routes):
            cleared[knob] = None
    return config.with_knobs(cleared) if cleared else config


def plan_launch(config: ServerConfig, help_text: str, prefix: tuple[str, ...], version: str = "?") -> LaunchPlan:
    """The full launch: ``prefix`` (e.g. python -m sglang.launch_server) plus model, port, knobs, extras.
    Without speculation (no draft model) no draft knob is passed (``without_draft_knobs``)."""
    config = without_draft_knobs(config)
    eng = engine_of(config.engine)
    flags = help_flags(help_text)
    _check_extra_flags(config, eng, flags, version)
    if not config.model:
        raise ConfigError(f"{config.source}: [server] model: no model is set, so there is nothing to serve",
                          hint='model = "/path/to/model.gguf" (llama.cpp) or "org/model" (SGLang); '
                               "`ddtune selftest` needs none: it brings tiny models of its own")
    routes = resolve_routes(config, flags, version)
    block_size, block_explicit = _block_size(config, routes)
    _check_rules(config, block_size)
    algorithm = _algorithm(config, routes, eng)
    argv: list[str] = [*prefix, eng.model_flag, config.model, "--host", config.host, "--port", str(config.port)]
    algorithm_set = _arg_value(config.extra_args, eng.algorithm_flag) is not None \
        or any(r.flag == eng.algorithm_flag for r in routes.values())
    if algorithm and not algorithm_set:
        argv += [eng.algorithm_flag, algorithm]
    draft_flag = eng.draft_flag(flags)
    if config.draft_model and _arg_value(config.extra_args, draft_flag) is None:
        argv += [draft_flag, config.draft_model]
    env = dict(config.env)
    switches: list[str] = []
    for knob, route in routes.items():
        value = config.knobs[knob]
        if route.switch and route.switch not in switches:
            switches.append(route.switch)
        if route.env:
            env[route.env] = _value_text(value, route)
            continue
        assert route.flag is not None
        if _arg_value(config.extra_args, route.flag) is not None or route.flag in config.extra_args:
            raise ConfigError(
                f"{config.source}: [server] extra_args sets {route.flag}, which knob '{knob}' also sets",
                hint=f"remove {route.flag} from extra_args and use the knob (--set {knob}=...)",
            )
        if value is True:
            argv.append(route.flag)  # a switch (store_true) flag
        elif value is not False:
            argv += [route.flag, _value_text(value, route)]
    argv += switches
    if eng.metrics_flag in flags and not any(a.startswith(eng.metrics_flag) for a in config.extra_args):
        # the counters give acceptance where responses carry none (chat before sglang 0.5.19)
        argv.append(eng.metrics_flag)
    argv += list(config.extra_args)
    expected = expected_reports(config.knobs, block_size if block_explicit else None, config.knob_table)
    return LaunchPlan(
        argv=tuple(argv), env=env, routes=routes, algorithm=algorithm, block_size=block_size, expected=expected
    )


def _check_extra_flags(config: ServerConfig, eng: Engine, flags: frozenset[str], version: str) -> None:
    """A flag a build removed is refused before a launch, naming its replacement; on an engine that
    exits on any unknown flag (llama-server), so is every long flag its --help does not list."""
    if not flags:
        return
    on = f"{eng.label} {version}" if version not in ("?", "unknown", "") else eng.label
    for arg in config.extra_args:
        flag = arg.split("=", 1)[0]
        if not flag.startswith("--") or flag in flags:
            continue
        if flag in eng.removed:
            raise ConfigError(f"{config.source}: [server] extra_args: {flag} was removed from {eng.label}: "
                              f"this build ({on}) does not take it",
                              hint=f"use {eng.removed[flag]} instead")
        if eng.strict_flags:
            raise ConfigError(f"{config.source}: [server] extra_args: {on} does not take {flag} (not in its --help); "
                              "it would exit at once", hint=f"fix the spelling for this build, or remove {flag}")


def expected_reports(knobs: Mapping[str, KnobValue], block_size: int | None,
                     table: KnobTable | None = None) -> dict[str, Any]:
    """What the server should report once it runs ``knobs``, keyed as verification reads it: each
    reported knob under its effective key, plus the settings the window and block size decide."""
    expected: dict[str, Any] = {}
    for spec in (table or SHIPPED).specs.values():
        if spec.effective_key:
            value = knobs.get(spec.name)
            expected[spec.effective_key] = as_count(value) if spec.type == "int" else value
    expected["compact_cache"] = as_count(knobs.get("window")) is not None
    if block_size is not None or "block_size" not in expected:
        expected["block_size"] = block_size  # what the flags decide (the knob, a fork's budget, extra_args)
    return expected


def plan_for_endpoint(config: ServerConfig) -> LaunchPlan:
    """What an endpoint should report for our knobs (no --help to read: any route is accepted)."""
    return LaunchPlan(argv=(), env={}, routes={}, algorithm=None, block_size=0,
                      expected=expected_reports(config.knobs, None, config.knob_table))

"""The ddtune config file and knob presets: TOML in, a validated frozen ServerConfig out.

Every error names the file, the field and the fix. With no config file at all the default is the
built-in simulator with a demo model, so ``ddtune up`` works out of the box.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from backends.errors import ConfigError, UsageError
from backends.paths import PRESETS_DIR, find_config

BACKENDS = ("sglang", "systemd", "endpoint", "sim")
BUILTIN_KNOBS = ("budget", "topk", "window")
KNOB_PRESETS_DIR = PRESETS_DIR / "knobs"
DEFAULT_KNOBS: dict[str, "KnobValue"] = {"budget": None, "topk": None, "window": 2048}

KnobValue = int | str | bool | None  # None means "none": the knob is cleared (no flag, no env var)

_SERVER_FIELDS = {
    "backend", "python", "model", "draft_model", "host", "port", "extra_args", "env",
    "ready_timeout_s", "stop_timeout_s", "flavour", "unit", "user", "knob_file", "url", "log_file",
    "block_size",
}
_MAP_FIELDS = {"flag", "env", "offset", "switch", "algorithm"}


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


@dataclass(frozen=True)
class ServerConfig:
    backend: str = "sim"
    python: str = "python3"
    model: str = "demo"
    draft_model: str | None = "demo-draft"
    host: str = "127.0.0.1"
    port: int = 30000
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    ready_timeout_s: float = 3600.0
    stop_timeout_s: float = 30.0
    flavour: str = "auto"
    unit: str | None = None
    user: bool = False
    knob_file: str | None = None
    url: str | None = None
    log_file: str | None = None
    block_size: int | None = None
    knobs: dict[str, KnobValue] = field(default_factory=lambda: dict(DEFAULT_KNOBS))
    knob_map: dict[str, KnobRoute] = field(default_factory=dict)
    source: str = "<built-in default: simulator>"

    @property
    def base_url(self) -> str:
        if self.url:
            return self.url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def with_knobs(self, updates: dict[str, KnobValue]) -> "ServerConfig":
        merged = dict(self.knobs)
        merged.update(updates)
        return replace(self, knobs=merged)

    def launch_identity(self) -> dict[str, Any]:
        """Everything that decides what the server runs: its hash tells whether a restart is needed."""
        return {
            "backend": self.backend, "python": self.python, "model": self.model,
            "draft_model": self.draft_model, "host": self.host, "port": self.port,
            "extra_args": list(self.extra_args), "env": dict(sorted(self.env.items())),
            "flavour": self.flavour, "unit": self.unit, "url": self.url, "block_size": self.block_size,
            "knobs": {k: self.knobs[k] for k in sorted(self.knobs)},
            "knob_map": {k: vars(v) for k, v in sorted(self.knob_map.items())},
        }

    def config_hash(self) -> str:
        blob = json.dumps(self.launch_identity(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _fail(source: str, field_name: str, problem: str, fix: str) -> ConfigError:
    return ConfigError(f"{source}: {field_name}: {problem}", hint=fix)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file", hint="check the path, or drop --config to use the defaults")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}", hint="fix the syntax at the line named above")


def parse_knob_value(source: str, name: str, raw: Any) -> KnobValue:
    """Validate one knob value. budget/topk/window are positive integers; "none" clears a knob."""
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
    if name in BUILTIN_KNOBS:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
            raise _fail(source, f"knob '{name}'", f"expected a positive integer or \"none\", got {raw!r}",
                        f"set {name} = 8 (any integer > 0), or {name} = \"none\" to clear it")
    elif isinstance(raw, float):
        raise _fail(source, f"knob '{name}'", f"expected an integer, string or true/false, got {raw!r}",
                    f"write {name} = {int(raw)} or quote it")
    return raw


def parse_set(expr: str) -> tuple[str, KnobValue]:
    """``--set knob=value`` -> (knob, value), validated like the config file."""
    name, sep, value = expr.partition("=")
    name = name.strip()
    if not sep or not name:
        raise UsageError(f"--set {expr!r}: expected KNOB=VALUE", hint="e.g. --set window=1024 or --set window=none")
    try:
        return name, parse_knob_value("--set", name, value)
    except ConfigError as exc:
        raise UsageError(exc.message, hint=exc.hint) from None


def _parse_route(source: str, name: str, raw: Any) -> KnobRoute:
    where = f"[knobs.map] {name}"
    if not isinstance(raw, dict):
        raise _fail(source, where, f"expected a table, got {raw!r}",
                    f'write {name} = {{ flag = "--my-flag" }} or {name} = {{ env = "MY_ENV_VAR" }}')
    unknown = set(raw) - _MAP_FIELDS
    if unknown:
        raise _fail(source, where, f"unknown field(s) {sorted(unknown)}", f"use only {sorted(_MAP_FIELDS)}")
    flag, env = raw.get("flag"), raw.get("env")
    if bool(flag) == bool(env):
        raise _fail(source, where, "needs exactly one of 'flag' or 'env'",
                    f'write {name} = {{ flag = "--my-flag" }} or {name} = {{ env = "MY_ENV_VAR" }}')
    if flag and not str(flag).startswith("--"):
        raise _fail(source, f"{where}.flag", f"{flag!r} is not a long flag", 'flags start with "--"')
    offset = raw.get("offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise _fail(source, f"{where}.offset", f"expected an integer, got {offset!r}", "e.g. offset = 1")
    return KnobRoute(knob=name, flag=flag, env=env, offset=offset, switch=raw.get("switch"),
                     algorithm=raw.get("algorithm"), source=source)


def _expect(source: str, section: dict, key: str, kind: type | tuple, fix: str) -> Any:
    value = section[key]
    if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise _fail(source, f"[server] {key}", f"expected {_kind_name(kind)}, got {value!r}", fix)
    if not isinstance(value, kind):
        raise _fail(source, f"[server] {key}", f"expected {_kind_name(kind)}, got {value!r}", fix)
    return value


def _kind_name(kind: type | tuple) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list", dict: "a table"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def config_from_dict(data: dict[str, Any], source: str) -> ServerConfig:
    unknown_sections = set(data) - {"server", "knobs"}
    if unknown_sections:
        raise _fail(source, f"[{sorted(unknown_sections)[0]}]", "unknown section",
                    "ddtune reads [server], [knobs] and [knobs.map]")
    server = data.get("server", {})
    if not isinstance(server, dict):
        raise _fail(source, "server", "expected a [server] table", "write [server] on its own line")
    unknown = set(server) - _SERVER_FIELDS
    if unknown:
        raise _fail(source, f"[server] {sorted(unknown)[0]}", "unknown field", f"known fields: {', '.join(sorted(_SERVER_FIELDS))}")
    kw: dict[str, Any] = {"source": source}
    if "backend" in server:
        backend = _expect(source, server, "backend", str, f'backend = one of {", ".join(BACKENDS)}')
        if backend not in BACKENDS:
            raise _fail(source, "[server] backend", f"unknown backend {backend!r}", f"use one of: {', '.join(BACKENDS)}")
        kw["backend"] = backend
    for key in ("python", "model", "host", "flavour", "unit", "knob_file", "url", "log_file"):
        if key in server:
            kw[key] = _expect(source, server, key, str, f'{key} = "..." (a quoted string)')
    if "draft_model" in server:
        value = _expect(source, server, "draft_model", str, 'draft_model = "org/draft-model" or "none"')
        kw["draft_model"] = None if value.lower() == "none" else value
    if "port" in server:
        port = _expect(source, server, "port", int, "port = 30000")
        if not 1 <= port <= 65535:
            raise _fail(source, "[server] port", f"{port} is out of range", "use a port from 1 to 65535, e.g. 30000")
        kw["port"] = port
    for key in ("ready_timeout_s", "stop_timeout_s"):
        if key in server:
            value = _expect(source, server, key, (int, float), f"{key} = 600 (seconds)")
            if value <= 0:
                raise _fail(source, f"[server] {key}", f"must be > 0, got {value}", f"{key} = 600 (seconds)")
            kw[key] = float(value)
    if "block_size" in server:
        value = _expect(source, server, "block_size", int, "block_size = 16")
        if value <= 0:
            raise _fail(source, "[server] block_size", f"must be > 0, got {value}", "block_size = 16")
        kw["block_size"] = value
    if "user" in server:
        kw["user"] = _expect(source, server, "user", bool, "user = true (systemctl --user) or false")
    if "extra_args" in server:
        extra = server["extra_args"]
        if isinstance(extra, str):
            extra = shlex.split(extra)
        if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
            raise _fail(source, "[server] extra_args", f"expected a list of strings, got {extra!r}",
                        'extra_args = ["--mem-fraction-static", "0.8"]')
        kw["extra_args"] = tuple(extra)
    if "env" in server:
        env = server["env"]
        if not isinstance(env, dict) or not all(isinstance(v, (str, int, float)) for v in env.values()):
            raise _fail(source, "[server] env", f"expected a table of strings, got {env!r}",
                        '[server.env] then SGLANG_LOG_MS = "1"')
        kw["env"] = {str(k): str(v) for k, v in env.items()}
    backend = kw.get("backend", "sim")
    if backend == "systemd" and not kw.get("unit"):
        raise _fail(source, "[server] unit", "the systemd backend needs a unit name", 'unit = "sglang.service"')
    if backend == "endpoint" and not kw.get("url"):
        raise _fail(source, "[server] url", "the endpoint backend needs a URL", 'url = "http://127.0.0.1:30000"')

    knobs_section = data.get("knobs", {})
    if not isinstance(knobs_section, dict):
        raise _fail(source, "knobs", "expected a [knobs] table", "write [knobs] then budget = 8")
    knob_map = {name: _parse_route(source, name, raw) for name, raw in knobs_section.get("map", {}).items()}
    knobs = dict(DEFAULT_KNOBS)
    for name, raw in knobs_section.items():
        if name == "map":
            continue
        if name not in BUILTIN_KNOBS and name not in knob_map:
            raise _fail(source, f"[knobs] {name}", "unknown knob",
                        f'add [knobs.map] {name} = {{ flag = "--..." }} (or env = "...") so ddtune knows how to pass it')
        knobs[name] = parse_knob_value(source, name, raw)
    kw["knobs"] = knobs
    kw["knob_map"] = knob_map
    return ServerConfig(**kw)


def load_config(explicit: str | Path | None = None) -> ServerConfig:
    """The config from ``--config``, else ./ddtune.toml, else the XDG config dir, else the default."""
    path = find_config(explicit)
    if path is None:
        return ServerConfig()
    return config_from_dict(_read_toml(path), str(path))


def preset_names() -> list[str]:
    return sorted(p.stem for p in KNOB_PRESETS_DIR.glob("*.toml"))


def load_preset(name: str) -> dict[str, KnobValue]:
    """Knob values of a shipped preset (name) or of a preset file (path)."""
    path = Path(name)
    if not (path.suffix == ".toml" and path.is_file()):
        path = KNOB_PRESETS_DIR / f"{name}.toml"
    if not path.is_file():
        raise UsageError(f"--preset {name!r}: no such preset",
                         hint=f"shipped presets: {', '.join(preset_names())} (or give a path to a .toml file)")
    data = _read_toml(path)
    knobs = data.get("knobs")
    if not isinstance(knobs, dict) or not knobs:
        raise _fail(str(path), "knobs", "a preset needs a [knobs] table", "write [knobs] then budget = 8")
    return {name: parse_knob_value(str(path), name, raw) for name, raw in knobs.items()}

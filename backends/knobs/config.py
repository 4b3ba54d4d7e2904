"""The ddtune config file and knob presets: TOML in, a validated frozen ServerConfig out.

Every error names the file, the field and the fix. With no config file at all the default is the
built-in simulator with a demo model, so ``ddtune up`` works out of the box.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from backends.core.apikey import argv_secrets, remember
from backends.core.datafile import read_toml
from backends.core.errors import ConfigError, UsageError
from backends.core.fields import (MAX_ARG, MAX_NAME, expect, fail, key_name, positive, server_base, shown,
                                  url_problem)
from backends.knobs.decl import KnobTable, read_declarations
from backends.knobs.engine import engine
from backends.knobs.shipped import DEFAULT_KNOBS, SHIPPED, shipped_table
from backends.knobs.spec import KnobRoute, KnobSpec, KnobValue
from backends.core.paths import find_config, presets_dir
from backends.core.plaintext import plain

BACKENDS = ("sglang", "systemd", "endpoint", "sim", "llamacpp")
# the engine each backend runs (its knob table and launch facts: backends.knobs.engine)
BACKEND_ENGINE = {"sglang": "sglang", "systemd": "sglang", "endpoint": "sglang", "sim": "sglang",
                  "llamacpp": "llamacpp"}

_SERVER_FIELDS = {
    "backend", "python", "model", "draft_model", "host", "port", "extra_args", "env",
    "ready_timeout_s", "stop_timeout_s", "flavour", "unit", "user", "knob_file", "url", "log_file",
    "block_size", "connect_grace_s", "binary",
}
_MAP_FIELDS = {"flag", "env", "offset", "switch", "algorithm"}
_MAX_ARGV = 1 << 20  # characters of extra_args in all: Linux takes ~2 MB of argv and environment together


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
    connect_grace_s: float = 30.0   # endpoint: how long nothing may listen at the URL before attaching fails
    flavour: str = "auto"
    unit: str | None = None
    user: bool = False
    knob_file: str | None = None
    url: str | None = None
    log_file: str | None = None
    block_size: int | None = None
    binary: str | None = None       # llamacpp: the user's llama-server (none: the llamacpp extra's launcher)
    knobs: dict[str, KnobValue] = field(default_factory=lambda: dict(DEFAULT_KNOBS))
    knob_map: dict[str, KnobRoute] = field(default_factory=dict)
    source: str = "<built-in default: simulator>"
    declared: tuple[KnobSpec, ...] = ()  # the config's own [knob.NAME] declarations
    inferred: str | None = None  # the backend was not written but read from the other fields: says which and why

    @property
    def engine(self) -> str:
        """The engine its backend runs (``backends.knobs.engine``): sglang or llamacpp."""
        return BACKEND_ENGINE.get(self.backend, "sglang")

    @cached_property
    def knob_table(self) -> KnobTable:
        """The one knob table this config reads: its engine's shipped declarations plus its own."""
        shipped = shipped_table(self.engine)
        return shipped.extended(self.declared) if self.declared else shipped

    @property
    def base_url(self) -> str:
        if self.url:
            return server_base(self.url)
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host  # an IPv6 address
        return f"http://{host}:{self.port}"

    @property
    def origin(self) -> str:
        """Which config this is, for the record: the file's real path (the same from any working
        directory or spelling), else the source as it is (the built-in default)."""
        return os.path.realpath(self.source) if os.path.isfile(self.source) else self.source

    def with_knobs(self, updates: dict[str, KnobValue]) -> ServerConfig:
        merged = dict(self.knobs)
        merged.update(updates)
        return replace(self, knobs=self.knob_table.listed(merged))

    def checked_knobs(self, knobs: Mapping[str, Any], source: str) -> dict[str, KnobValue]:
        """Knob values read back from a file (a sweep's plan or manifest), each parsed by this config's
        knob table as its own file's are, and a text value on one printable line: ConfigError naming
        ``source`` and the knob otherwise. A poisoned plan's ``budget = -5`` or a value holding a
        line break and an escape sequence reached the server's argv and ddtune's output unchecked."""
        out: dict[str, KnobValue] = {}
        for name, raw in knobs.items():
            if isinstance(raw, str) and plain(raw, one_line=True) != raw:
                raise fail(source, f"knob '{key_name(name)}'", f"{shown(raw)} holds a line break or a control "
                           "character", "give a value ddtune wrote, or start a new sweep")
            out[name] = None if raw is None else self.knob_table.spec(name, self.knob_map.get(name)).parse(raw, source)
        return out

    def launch_identity(self) -> dict[str, Any]:
        """Everything that decides what the server runs: its hash tells whether a restart is needed."""
        return {
            "backend": self.backend, "python": self.python, "model": self.model,
            "draft_model": self.draft_model, "host": self.host, "port": self.port,
            "extra_args": list(self.extra_args), "env": dict(sorted(self.env.items())),
            "flavour": self.flavour, "unit": self.unit, "url": self.url, "block_size": self.block_size,
            **({"binary": self.binary} if self.binary else {}),
            "knobs": dict(sorted(self.knob_table.listed(self.knobs).items())),
            "knob_map": {k: vars(v) for k, v in sorted(self.knob_map.items())},
        } | ({"declared": [asdict(s) for s in self.declared]} if self.declared else {})

    def config_hash(self) -> str:
        blob = json.dumps(self.launch_identity(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def startup_key(self) -> str:
        """Which server a startup history (and so an ETA) belongs to: everything that decides how it
        starts except the knobs, so restarts with other knobs share it and another backend, model,
        interpreter or flag set (a simulator named like a real model) never lends its times."""
        identity = self.launch_identity()
        del identity["knobs"]
        blob = json.dumps(identity, sort_keys=True, default=str)
        return f"{self.backend}:{self.model}:{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def _fail(source: str, field_name: str, problem: str, fix: str) -> ConfigError:
    return fail(source, field_name, problem, fix)  # type: ignore[return-value]


def parse_set(expr: str, block_size: int | None = None, table: KnobTable | None = None) -> tuple[str, KnobValue]:
    """``--set knob=value`` -> (knob, value), validated like the config file (``block_size``: the
    config's, so a hint suggests a window the server takes; ``table``: the config's knob table)."""
    name, sep, value = expr.partition("=")
    name = name.strip()
    if not sep or not name:
        raise UsageError(f"--set {expr!r}: expected KNOB=VALUE", hint="e.g. --set window=1024 or --set window=none")
    try:
        return name, (table or SHIPPED).spec(name).parse(value, "--set", block_size=block_size)
    except ConfigError as exc:
        raise UsageError(exc.message, hint=exc.hint) from None


_ROUTE_FIX = '{0} = {{ flag = "--my-flag" }} or {0} = {{ env = "MY_ENV_VAR" }}'


def _env_name(source: str, where: str, value: Any, fix: str) -> str:
    name = expect(source, where, value, str, fix, max_len=MAX_NAME)
    if not name or "=" in name:
        raise _fail(source, where, f"{shown(name)} is not an environment variable name", fix)
    return name


def _long_flag(source: str, where: str, value: Any, fix: str) -> str:
    flag = expect(source, where, value, str, fix)
    if not flag.startswith("--") or len(flag) < 3:
        raise _fail(source, where, f"{shown(flag)} is not a long flag", f'flags start with "--"; {fix}')
    return flag


def _parse_route(source: str, name: str, raw: Any) -> KnobRoute:
    where = f"[knobs.map] {key_name(name)}"
    fix = _ROUTE_FIX.format(key_name(name))
    expect(source, where, raw, dict, fix)
    unknown = set(raw) - _MAP_FIELDS
    if unknown:
        raise _fail(source, f"{where}.{key_name(sorted(unknown)[0])}", "unknown field",
                    f"use only {sorted(_MAP_FIELDS)}")
    if ("flag" in raw) == ("env" in raw):
        raise _fail(source, where, "needs exactly one of 'flag' or 'env'", fix)
    flag = _long_flag(source, f"{where}.flag", raw["flag"], fix) if "flag" in raw else None
    env = _env_name(source, f"{where}.env", raw["env"], fix) if "env" in raw else None
    offset = expect(source, f"{where}.offset", raw.get("offset", 0), int, "e.g. offset = 1")
    switch = (
        _long_flag(source, f"{where}.switch", raw["switch"], 'switch = "--enable-my-feature"')
        if "switch" in raw
        else None
    )
    algorithm = (
        expect(source, f"{where}.algorithm", raw["algorithm"], str, 'algorithm = "DFLASH"')
        if "algorithm" in raw
        else None
    )
    if algorithm is not None and not algorithm.strip():
        raise _fail(source, f"{where}.algorithm", "is empty", 'algorithm = "DFLASH", or leave it out')
    return KnobRoute(knob=name, flag=flag, env=env, offset=offset, switch=switch, algorithm=algorithm, source=source)


def _server_settings(source: str, server: dict[str, Any]) -> dict[str, Any]:
    """The [server] table as ServerConfig keyword arguments, every field checked."""
    unknown = set(server) - _SERVER_FIELDS
    if unknown:
        raise _fail(
            source,
            f"[server] {key_name(sorted(unknown)[0])}",
            "unknown field",
            f"known fields: {', '.join(sorted(_SERVER_FIELDS))}",
        )
    at = lambda key: f"[server] {key}"  # noqa: E731
    kw: dict[str, Any] = {}
    if "backend" in server:
        backend = expect(source, at("backend"), server["backend"], str, f"backend = one of {', '.join(BACKENDS)}")
        if backend not in BACKENDS:
            raise _fail(
                source, at("backend"), f"unknown backend {shown(backend)}", f"use one of: {', '.join(BACKENDS)}"
            )
        kw["backend"] = backend
    for key in ("python", "model", "host", "flavour", "unit", "knob_file", "url", "log_file", "binary"):
        if key in server:
            kw[key] = expect(source, at(key), server[key], str, f'{key} = "..." (a quoted string)', max_len=MAX_NAME)
    if "draft_model" in server:
        value = expect(
            source, at("draft_model"), server["draft_model"], str, 'draft_model = "org/draft-model" or "none"',
            max_len=MAX_NAME,
        )
        kw["draft_model"] = None if value.lower() == "none" else value
    for key, fix in (
        ("python", 'python = "python3"'),
        ("model", 'model = "org/model"'),
        ("draft_model", 'draft_model = "org/draft-model" or "none"'),
    ):
        if key in kw and kw[key] is not None and not kw[key].strip():
            raise _fail(source, at(key), "is empty", fix)
    if "port" in server:
        port = positive(source, at("port"), server["port"], "port = 30000", integer=True)
        if port > 65535:
            raise _fail(source, at("port"), f"{port} is out of range", "use a port from 1 to 65535, e.g. 30000")
        kw["port"] = port
    for key, example in (("ready_timeout_s", 600), ("stop_timeout_s", 30), ("connect_grace_s", 30)):
        if key in server:
            kw[key] = float(positive(source, at(key), server[key], f"{key} = {example} (seconds, > 0)"))
    if kw.get("url") and (problem := url_problem(kw["url"])):
        raise _fail(source, at("url"), problem, 'url = "http://127.0.0.1:30000" (http(s), a host, a port 1-65535)')
    if not kw.get("url") and "host" in kw and url_problem(ServerConfig(host=kw["host"]).base_url):
        raise _fail(source, at("host"), f"{shown(kw['host'])} is not a host name or address",
                    'host = "127.0.0.1" (or a name, or an IPv6 address such as "::1")')
    if "block_size" in server:
        kw["block_size"] = positive(source, at("block_size"), server["block_size"], "block_size = 16", integer=True)
    if "user" in server:
        kw["user"] = expect(source, at("user"), server["user"], bool, "user = true (systemctl --user) or false")
    if "extra_args" in server:
        kw["extra_args"] = _extra_args(source, server["extra_args"])
    if "env" in server:
        kw["env"] = _env(source, server["env"])
    if "backend" not in kw:
        kw["backend"], kw["inferred"] = _inferred_backend(source, server)
    backend = kw["backend"]
    if backend == "systemd" and not kw.get("unit"):
        raise _fail(source, at("unit"), "the systemd backend needs a unit name", 'unit = "sglang.service"')
    if backend == "endpoint" and not kw.get("url"):
        raise _fail(source, at("url"), "the endpoint backend needs a URL", 'url = "http://127.0.0.1:30000"')
    return kw


# what a [server] table without ``backend`` names -> the backend it means: a real server is never
# silently replaced by the simulator (a user on a GPU box would measure it and believe it)
# the first key a config without ``backend`` names says what it runs (``binary``: a llama-server of the user's)
_INFERRED = (("unit", "systemd"), ("binary", "llamacpp"), ("python", "sglang"), ("model", "sglang"),
             ("url", "endpoint"))


def _inferred_backend(source: str, server: dict[str, Any]) -> tuple[str, str]:
    """The backend a config without ``backend`` runs, and the one line that says so."""
    for key, backend in _INFERRED:
        if key in server:
            named = " and ".join(f"'{k}'" for k, b in _INFERRED if b == backend and k in server)
            return backend, (f"{source}: no [server] backend; it names {named}, so it runs {backend} "
                             f'(write backend = "{backend}" to say so, or backend = "sim" for the simulator)')
    return "sim", (f"{source}: no [server] backend, python or model: it is the built-in SGLang simulator "
                   f'(write backend = "sglang" with python and model for a real server, or backend = "sim")')


def _extra_args(source: str, extra: Any) -> tuple[str, ...]:
    fix = 'extra_args = ["--mem-fraction-static", "0.8"]'
    if isinstance(extra, str):
        try:
            extra = shlex.split(extra)
        except ValueError as exc:  # "No closing quotation", "No escaped character"
            raise _fail(
                source,
                "[server] extra_args",
                f"cannot split it into arguments: {exc}",
                f"close the quote, or write a list: {fix}",
            ) from None
    expect(source, "[server] extra_args", extra, list, fix)
    args = tuple(expect(source, f"[server] extra_args[{i}]", a, str, fix, max_len=MAX_ARG) for i, a in enumerate(extra))
    if sum(len(a) for a in args) > _MAX_ARGV:
        raise _fail(source, "[server] extra_args", f"{sum(len(a) for a in args):,} characters in all, more than "
                    f"the {_MAX_ARGV:,} a command line can carry", f"shorten them; {fix}")
    remember(*argv_secrets(args))  # the key the server will print (in its server_args dump) is masked
    return args


def _env(source: str, env: Any) -> dict[str, str]:
    fix = '[server.env] then SGLANG_LOG_MS = "1"'
    expect(source, "[server] env", env, dict, fix)
    out = {}
    for key, value in env.items():
        where = f"[server.env] {key_name(key)}"
        _env_name(source, where, key, fix)
        out[key] = str(expect(source, where, value, (str, int, float), f'{key_name(key)} = "1" (quote true/false)',
                              max_len=MAX_ARG))
    return out


def config_from_dict(data: dict[str, Any], source: str) -> ServerConfig:
    unknown_sections = set(data) - {"server", "knobs", "knob"}
    if unknown_sections:
        raise _fail(
            source,
            f"[{key_name(sorted(unknown_sections)[0])}]",
            "unknown section",
            "ddtune reads [server], [knobs], [knobs.map] and [knob.NAME] declarations (docs/knobs.md)",
        )
    declared = read_declarations(source, data["knob"]) if "knob" in data else ()
    server = expect(source, "server", data.get("server", {}), dict, "write [server] on its own line")
    kw: dict[str, Any] = {"source": source, **_server_settings(source, server)}
    engine_name = BACKEND_ENGINE.get(kw.get("backend", "sim"), "sglang")
    default_model = engine(engine_name).default_model
    if default_model is not None and "model" not in kw:
        kw["model"] = default_model
        kw.setdefault("draft_model", None)  # no model: no draft either (selftest brings both)
    shipped = shipped_table(engine_name)
    table = shipped.extended(declared) if declared else shipped
    knobs_section = expect(source, "knobs", data.get("knobs", {}), dict, "write [knobs] then budget = 8")
    routes = expect(
        source, "[knobs] map", knobs_section.get("map", {}), dict, '[knobs.map] then my_knob = { flag = "--my-flag" }'
    )
    knob_map = {name: _parse_route(source, name, raw) for name, raw in routes.items()}
    knobs = table.defaults()
    for name, raw in knobs_section.items():
        if name == "map":
            continue
        if name not in table.known(knob_map):
            raise _fail(
                source,
                f"[knobs] {key_name(name)}",
                "unknown knob",
                f'declare it: [knob.{key_name(name)}] with type and flag (docs/knobs.md), or map it: '
                f'[knobs.map] {key_name(name)} = {{ flag = "--..." }} (or env = "...")',
            )
        knobs[name] = table.spec(name, knob_map.get(name)).parse(raw, source)
    kw["knobs"] = table.listed(knobs)
    kw["knob_map"] = knob_map
    kw["declared"] = declared
    return ServerConfig(**kw)


def load_config(explicit: str | Path | None = None) -> ServerConfig:
    """The config from ``--config``, else ./ddtune.toml, else the XDG config dir, else the default."""
    path = find_config(explicit)
    if path is None:
        return ServerConfig()
    return config_from_dict(read_toml(path), str(path))


def preset_names() -> list[str]:
    return sorted(p.stem for p in (presets_dir() / "knobs").glob("*.toml"))


def load_preset(name: str, table: KnobTable | None = None) -> dict[str, KnobValue]:
    """Knob values of a shipped preset (name) or of a preset file (path), by ``table`` (the config's)."""
    if len(name) > MAX_NAME or "\x00" in name:
        raise UsageError(f"--preset {shown(name)}: not a preset name or path ({len(name):,} characters"
                         + (", a NUL byte" if "\x00" in name else "") + ")",
                         hint=f"shipped presets: {', '.join(preset_names())} (or give a path to a .toml file)")
    path = Path(name)
    if not (path.suffix == ".toml" and os.path.isfile(path)):  # os.path: a name too long is False, not OSError
        path = presets_dir() / "knobs" / f"{name}.toml"
    if not os.path.isfile(path):
        raise UsageError(
            f"--preset {shown(name)}: no such preset",
            hint=f"shipped presets: {', '.join(preset_names())} (or give a path to a .toml file)",
        )
    data = read_toml(path)
    knobs = data.get("knobs")
    if not isinstance(knobs, dict) or not knobs:
        raise _fail(str(path), "knobs", "a preset needs a [knobs] table", "write [knobs] then budget = 8")
    return {name: (table or SHIPPED).spec(name).parse(raw, str(path)) for name, raw in knobs.items()}

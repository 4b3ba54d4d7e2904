"""The engines ddtune drives (SGLang, llama.cpp), as data: how a launch names the model, the draft,
the speculative algorithm and the metrics switch, what its ``--help`` must list, which settings are
checked on every start, and which flags a build removed (with their replacement).

Declared in presets/flavours.toml under ``[engine.NAME]``; a config's backend picks its engine
(``ServerConfig.engine``), and every reader takes the engine's facts from here, never from a name
check of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backends.core.datafile import read_toml
from backends.core.errors import ConfigError
from backends.core.paths import presets_dir

_FIELDS = {"label", "model_flag", "draft_flags", "algorithm_flag", "algorithm", "metrics_flag", "help_lists",
           "verify_always", "strict_flags", "removed", "default_model"}


@dataclass(frozen=True)
class Engine:
    name: str
    label: str                        # shown: "SGLang", "llama.cpp"
    model_flag: str
    draft_flags: tuple[str, ...]      # the first the server's --help lists is used
    algorithm_flag: str
    algorithm: str                    # what a draft model turns on when no knob says otherwise
    metrics_flag: str                 # added where --help lists it: acceptance from the counters
    help_lists: str                   # a flag every real --help of this engine lists
    verify_always: tuple[str, ...]    # settings checked on every start, requested or not
    strict_flags: bool = False        # the server exits on an unknown flag: refuse it before a launch
    removed: Mapping[str, str] = field(default_factory=dict)  # flag -> its replacement
    # the model (and no draft) a config of this engine has before it names one; None: ServerConfig's
    # (the simulator's demo model). "": none, so a start says to set one (selftest brings its own)
    default_model: str | None = None

    def draft_flag(self, flags: frozenset[str]) -> str:
        """The draft-model flag this build lists (the newest spelling when --help lists none)."""
        return next((f for f in self.draft_flags if f in flags), self.draft_flags[0])


def _engine(name: str, raw: Any, source: str) -> Engine:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: [engine.{name}] is not a table", hint="write [engine.NAME] then label = ...")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise ConfigError(f"{source}: [engine.{name}] {unknown[0]}: unknown field",
                          hint=f"an engine takes {', '.join(sorted(_FIELDS))}")
    try:
        return Engine(name=name, label=str(raw["label"]), model_flag=str(raw["model_flag"]),
                      draft_flags=tuple(str(f) for f in raw["draft_flags"]),
                      algorithm_flag=str(raw["algorithm_flag"]), algorithm=str(raw["algorithm"]),
                      metrics_flag=str(raw["metrics_flag"]), help_lists=str(raw["help_lists"]),
                      verify_always=tuple(str(k) for k in raw["verify_always"]),
                      strict_flags=bool(raw.get("strict_flags", False)),
                      removed={str(k): str(v) for k, v in dict(raw.get("removed", {})).items()},
                      default_model=str(raw["default_model"]) if "default_model" in raw else None)
    except KeyError as exc:
        raise ConfigError(f"{source}: [engine.{name}] {exc.args[0]}: missing",
                          hint="see the [engine.sglang] table of presets/flavours.toml") from None


# the shipped declarations, read once per process: the engines here, the knobs in backends/knobs/shipped.py
FLAVOURS_FILE = presets_dir() / "flavours.toml"
FLAVOURS: Mapping[str, Any] = read_toml(FLAVOURS_FILE)
ENGINES: Mapping[str, Engine] = {name: _engine(name, raw, str(FLAVOURS_FILE))
                                 for name, raw in FLAVOURS.get("engine", {}).items()}
DEFAULT_ENGINE = "sglang"


def engine(name: str) -> Engine:
    return ENGINES.get(name) or ENGINES[DEFAULT_ENGINE]

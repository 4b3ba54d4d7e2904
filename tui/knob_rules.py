"""Knob checks the editor runs as the user types (cheap and local). The full check against the
server's --help runs in the lifecycle engine on Apply, before anything is stopped. The rules are
the config's knob table's (``config.knob_table``: types, bounds and the rules between knobs); this
only words them for the editor's narrow notes."""

from __future__ import annotations

from backends.knobs import (DEFAULT_BLOCK_SIZE, KnobValue, ServerConfig, as_count, cross_knob_errors, knob_text,
                            load_preset, preset_names)
from backends.core import DdtuneError


def validate_knobs(values: dict[str, str], config: ServerConfig) -> dict[str, str]:
    errors: dict[str, str] = {}
    parsed: dict[str, KnobValue] = {}
    table = config.knob_table
    typed_block = values.get("block_size")
    block = config.block_size or DEFAULT_BLOCK_SIZE
    if typed_block is not None:
        try:
            block = as_count(table.spec("block_size").parse(typed_block, "editor")) or block
        except DdtuneError:
            pass  # its own note says what is wrong
    for name, raw in values.items():
        try:
            parsed[name] = table.spec(name, config.knob_map.get(name)).parse(raw, "editor", block_size=block)
        except DdtuneError as exc:
            errors[name] = exc.hint or exc.message
    for name, problem in cross_knob_errors(parsed, table, block).items():
        errors.setdefault(name, problem)
    return errors


def knob_help(name: str, config: ServerConfig | None = None) -> str:
    """The knob's one help line (what it is, its unit, what none means), for the editor."""
    if config is None:
        from backends.knobs import knob_spec

        return knob_spec(name).describe()
    return config.knob_table.spec(name, config.knob_map.get(name)).describe()


def editor_values(config: ServerConfig) -> dict[str, str]:
    """Every knob the editor offers, as text: the table's (cleared ones as none), then the config's own."""
    table = config.knob_table
    names = table.known({k: None for k in (*config.knob_map, *config.knobs)})
    return {name: knob_text(config.knobs.get(name, table.spec(name).default)) for name in names}


def presets_as_text(config: ServerConfig | None = None) -> dict[str, dict[str, str]]:
    table = config.knob_table if config else None
    out = {}
    for name in preset_names():
        try:
            out[name] = {k: knob_text(v) for k, v in load_preset(name, table).items()}
        except DdtuneError:
            continue
    return out

"""Knob checks the editor runs as the user types (cheap and local). The full check against the
server's --help runs in the lifecycle engine on Apply, before anything is stopped. The rules are
the knob table's (backends.knobs.KNOBS); this only words them for the editor's narrow notes."""

from __future__ import annotations

from backends.config import ServerConfig, load_preset, preset_names
from backends.errors import DdtuneError
from backends.knobs import DEFAULT_BLOCK_SIZE, KnobValue, knob_spec, knob_text, window_too_small


def validate_knobs(values: dict[str, str], config: ServerConfig) -> dict[str, str]:
    errors: dict[str, str] = {}
    parsed: dict[str, KnobValue] = {}
    block = config.block_size or DEFAULT_BLOCK_SIZE
    for name, raw in values.items():
        try:
            parsed[name] = knob_spec(name, config.knob_map.get(name)).parse(raw, "editor", block_size=block)
        except DdtuneError as exc:
            errors[name] = exc.hint or exc.message
    if window_too_small(parsed, block):
        errors["window"] = f"must be >= {block} (the block size), or none"
    return errors


def knob_help(name: str, config: ServerConfig | None = None) -> str:
    """The knob's one help line (what it is, its unit, what none means), for the editor."""
    return knob_spec(name, config.knob_map.get(name) if config else None).describe()


def presets_as_text() -> dict[str, dict[str, str]]:
    out = {}
    for name in preset_names():
        try:
            out[name] = {k: knob_text(v) for k, v in load_preset(name).items()}
        except DdtuneError:
            continue
    return out

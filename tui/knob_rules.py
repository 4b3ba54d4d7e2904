"""Knob checks the editor runs as the user types (cheap and local). The full check against the
server's --help runs in the lifecycle engine on Apply, before anything is stopped."""

from __future__ import annotations

from backends.config import ServerConfig, load_preset, parse_knob_value, preset_names
from backends.errors import DdtuneError
from backends.knobs import DEFAULT_BLOCK_SIZE


def validate_knobs(values: dict[str, str], config: ServerConfig) -> dict[str, str]:
    errors: dict[str, str] = {}
    parsed = {}
    for name, raw in values.items():
        try:
            parsed[name] = parse_knob_value("editor", name, raw)
        except DdtuneError as exc:
            errors[name] = exc.hint or exc.message
    window = parsed.get("window")
    block = config.block_size or DEFAULT_BLOCK_SIZE
    if isinstance(window, int) and not isinstance(window, bool) and window < block:
        errors["window"] = f"must be >= {block} (the block size), or none"
    return errors


def presets_as_text() -> dict[str, dict[str, str]]:
    out = {}
    for name in preset_names():
        try:
            out[name] = {k: "none" if v is None else str(v) for k, v in load_preset(name).items()}
        except DdtuneError:
            continue
    return out

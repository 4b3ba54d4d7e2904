"""The tables of knobs ddtune ships, one per engine: declared as data in presets/flavours.toml.

A knob's ``engine`` (default sglang) says whose table holds it; a config's ``[knob.NAME]`` tables
extend its engine's table (``ServerConfig.knob_table``); everything else reads knob facts from here
or from that extension, never from a second copy. ``SHIPPED`` is SGLang's (the simulator's too).
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.knobs.decl import KnobTable, read_declarations
from backends.knobs.engine import DEFAULT_ENGINE, ENGINES, FLAVOURS, FLAVOURS_FILE
from backends.knobs.spec import KnobSpec, KnobValue

_DECLARED = read_declarations(str(FLAVOURS_FILE), FLAVOURS.get("knob", {}))
TABLES: Mapping[str, KnobTable] = {
    name: KnobTable(base=engine.verify_always).extended(s for s in _DECLARED if s.engine == name)
    for name, engine in ENGINES.items()}
SHIPPED = TABLES[DEFAULT_ENGINE]
KNOBS: Mapping[str, KnobSpec] = SHIPPED.specs
DEFAULT_KNOBS: dict[str, KnobValue] = SHIPPED.defaults()


def shipped_table(engine: str) -> KnobTable:
    """The shipped knob table of ``engine`` (SGLang's for a name no engine has)."""
    return TABLES.get(engine, SHIPPED)

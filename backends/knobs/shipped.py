"""The one table of knobs ddtune ships: declared as data in presets/flavours.toml.

A config's ``[knob.NAME]`` tables extend it (``ServerConfig.knob_table``); everything else reads knob
facts from here or from that extension, never from a second copy.
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.core.datafile import read_toml
from backends.core.paths import presets_dir
from backends.knobs.decl import KnobTable, read_declarations
from backends.knobs.spec import KnobSpec, KnobValue

FLAVOURS_FILE = presets_dir() / "flavours.toml"
SHIPPED = KnobTable().extended(read_declarations(str(FLAVOURS_FILE), read_toml(FLAVOURS_FILE).get("knob", {})))
KNOBS: Mapping[str, KnobSpec] = SHIPPED.specs
DEFAULT_KNOBS: dict[str, KnobValue] = SHIPPED.defaults()

"""The knob editor's use cases: what it offers (``knob_form``) and what it makes of the text typed
(``check_knob_texts``). The full check against the server's ``--help`` runs in the lifecycle on
Apply, before anything is stopped; these are the cheap, local rules of the config's knob table
(types, bounds, the rules between knobs), worded for the editor's narrow notes. The console only
renders them.

Every command's parser lists the shipped knobs (``knob_form()``'s help), so importing this module
stays as cheap as the knob table: the config loader and the launch plan are imported where a config
is at hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from backends.core.errors import DdtuneError
from backends.knobs.shipped import KNOBS
from backends.knobs.spec import DEFAULT_BLOCK_SIZE, KnobValue, as_count, knob_text

if TYPE_CHECKING:
    from backends.knobs.config import ServerConfig


@dataclass(frozen=True)
class KnobForm:
    """The editor's fields: each knob's ``values`` as text (the table's, cleared ones as none, then the
    config's own declarations) and its one ``help`` line (what it is, its unit, what none means).
    Without a config: no values, and the help of every shipped knob (``ddtune --help``'s list)."""

    config: ServerConfig | None
    values: dict[str, str]
    help: dict[str, str]

    def presets(self) -> dict[str, dict[str, str]]:
        """Each shipped preset's knobs as text, by the config's table (one that does not load is left out)."""
        from backends.knobs.config import load_preset, preset_names

        table = self.config.knob_table if self.config else None
        out = {}
        for name in preset_names():
            try:
                out[name] = {k: knob_text(v) for k, v in load_preset(name, table).items()}
            except DdtuneError:
                continue
        return out

    @staticmethod
    def preset_names() -> list[str]:
        from backends.knobs.config import preset_names

        return preset_names()

    def check(self, texts: dict[str, str]) -> KnobTexts:
        """What the editor makes of the text typed into it (needs the form's config)."""
        assert self.config is not None, "the form of a config checks what is typed"
        return check_knob_texts(texts, self.config)


def knob_form(config: ServerConfig | None = None) -> KnobForm:
    if config is None:
        return KnobForm(None, {}, {name: spec.describe() for name, spec in KNOBS.items()})
    table = config.knob_table
    names = table.known({k: None for k in (*config.knob_map, *config.knobs)})
    values = {name: knob_text(config.knobs.get(name, table.spec(name).default)) for name in names}
    return KnobForm(config, values, {name: table.spec(name, config.knob_map.get(name)).describe() for name in names})


@dataclass(frozen=True)
class KnobTexts:
    """Typed knob values read from the editor's text: ``values`` (each that parses) and ``problems``
    (knob -> the one line that says what is wrong: its own rule, or one between knobs)."""

    values: dict[str, KnobValue] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def check_knob_texts(texts: dict[str, str], config: ServerConfig) -> KnobTexts:
    from backends.knobs.plan import cross_knob_errors

    problems: dict[str, str] = {}
    parsed: dict[str, KnobValue] = {}
    table = config.knob_table
    typed_block = texts.get("block_size")
    block = config.block_size or DEFAULT_BLOCK_SIZE
    if typed_block is not None:
        try:
            block = as_count(table.spec("block_size").parse(typed_block, "editor")) or block
        except DdtuneError:
            pass  # its own note says what is wrong
    for name, raw in texts.items():
        try:
            parsed[name] = table.spec(name, config.knob_map.get(name)).parse(raw, "editor", block_size=block)
        except DdtuneError as exc:
            problems[name] = exc.hint or exc.message
    for name, problem in cross_knob_errors(parsed, table, block).items():
        problems.setdefault(name, problem)
    return KnobTexts(parsed, problems)

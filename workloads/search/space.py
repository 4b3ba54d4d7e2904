"""The knob space a search walks: ``--space 'budget=4,8,16 topk=2,4,6 window=1024,2048,none'``.

Parsing reuses the one knob table (backends.knobs.plan): each value is read by the knob's own
``KnobSpec.parse`` (so ``none`` clears a knob and a bad value names the knob and the fix), a knob
must be one the config can set (the table's, or its ``[knobs.map]`` ones), and a window below the
block size is refused here, before any restart, as launch planning would refuse it later.

A *point* is one configuration: a tuple of values in the order of the space's axes. Its label
(``budget=8 topk=4 window=2048``) names it in output, folders and the JSON summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Any

from backends.core import UsageError
from backends.core import key_name
from backends.knobs import DEFAULT_BLOCK_SIZE, KnobValue, knob_spec, knob_text, known_knobs, window_too_small
from backends.knobs import KnobTable

if TYPE_CHECKING:
    from backends.knobs import ServerConfig
from workloads.runs.checks import PLAUSIBLE

Point = tuple[KnobValue, ...]
EXAMPLE = "budget=4,8,16 topk=2,4,6 window=1024,2048,none"
_HINT = f"write knob=value,value,... per knob, separated by spaces, e.g. --space '{EXAMPLE}'"


@dataclass(frozen=True)
class SearchSpace:
    """Ordered axes: (knob, its values). The search tunes the knobs in this order."""

    axes: tuple[tuple[str, tuple[KnobValue, ...]], ...]

    @property
    def knobs(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def size(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    @property
    def shape(self) -> str:
        """``budget 3 x topk 3``: each knob and how many values it takes."""
        return " x ".join(f"{name} {len(values)}" for name, values in self.axes)

    @property
    def one_pass(self) -> int:
        """About how many configurations one pass starts: the start, and each other value of each knob."""
        return 1 + sum(len(values) - 1 for _, values in self.axes)

    def grid(self) -> list[Point]:
        return [tuple(p) for p in product(*(values for _, values in self.axes))]

    def middle(self) -> Point:
        """The middle value of each knob (the lower middle for an even count): where a search with
        nothing running starts, as far from every edge as the space allows."""
        return tuple(values[(len(values) - 1) // 2] for _, values in self.axes)

    def line(self, point: Point, axis: int) -> tuple[Point, ...]:
        """Every point that differs from ``point`` in knob ``axis`` only, in the space's value order."""
        return tuple(point[:axis] + (v,) + point[axis + 1:] for v in self.axes[axis][1])

    def knob_values(self, point: Point) -> dict[str, KnobValue]:
        return dict(zip(self.knobs, point, strict=True))

    def label(self, point: Point) -> str:
        return " ".join(f"{name}={knob_text(v)}" for name, v in zip(self.knobs, point, strict=True))

    def holds(self, point: Point) -> bool:
        """Whether ``point`` is one of the grid's: each value one of its knob's (the grid is not built:
        a search reads every observation's point back through this)."""
        return len(point) == len(self.axes) and all(
            v in values for v, (_, values) in zip(point, self.axes, strict=True))

    def find(self, knobs: Mapping[str, Any]) -> Point | None:
        """The point whose knobs ``knobs`` holds (other knobs ignored), or None when it is not in the space."""
        point = tuple(knobs.get(name) for name in self.knobs)
        return point if self.holds(point) else None

    def point(self, values: Iterable[Any]) -> Point:
        """A point read back from JSON: checked to be one of the space's."""
        point = tuple(values)
        if not self.holds(point):
            raise ValueError(f"{point!r} is not a point of the space")
        return point

    def to_json(self) -> list:
        return [[name, list(values)] for name, values in self.axes]

    @classmethod
    def from_json(cls, data: list) -> SearchSpace:
        """The space a search.json holds; one of more than PLAUSIBLE["points"] points is a ValueError
        (no search of a plausible size needs more)."""
        space = cls(tuple((str(name), tuple(values)) for name, values in data))
        if math.prod(len(values) for _, values in space.axes) > PLAUSIBLE["points"]:
            raise ValueError(f"a space of more than {PLAUSIBLE['points']:,} points")
        return space

    def text(self) -> str:
        """The space as --space takes it (round-trips through parse_space)."""
        return " ".join(f"{name}={','.join(knob_text(v) for v in values)}" for name, values in self.axes)


def parse_space(text: str, knob_map: Mapping[str, Any] | None = None, block_size: int | None = None,
                source: str = "--space", table: KnobTable | None = None) -> SearchSpace:
    """``knob=v1,v2 knob=...`` -> SearchSpace; UsageError/ConfigError naming the field and the fix.
    ``table``: the config's knob table (its declared knobs), else the shipped one."""
    known = known_knobs(knob_map or {}, table)
    axes: list[tuple[str, tuple[KnobValue, ...]]] = []
    tokens = text.replace(";", " ").split()
    if not tokens:
        raise UsageError(f"{source}: no knobs given", hint=_HINT)
    for token in tokens:
        name, eq, raw = token.partition("=")
        if not eq or not name:
            raise UsageError(f"{source}: {token!r} is not knob=values", hint=_HINT)
        if name not in known:
            raise UsageError(f"{source}: unknown knob {key_name(name)!r}",
                             hint=f"known knobs: {', '.join(known)} (map others under [knobs.map] in the config)")
        if name in dict(axes):
            raise UsageError(f"{source}: knob {key_name(name)!r} is given twice",
                             hint=f"list all its values once: {name}=a,b,c")
        texts = raw.split(",")
        if not raw or any(not v.strip() for v in texts):
            raise UsageError(f"{source}: knob {key_name(name)!r}: empty value in {raw!r}",
                             hint=f"write values separated by commas, e.g. {name}={_example(name, table)}")
        spec = knob_spec(name, table=table)
        values: list[KnobValue] = []
        for v in texts:
            value = spec.parse(v, source, block_size)
            if value in values:
                raise UsageError(f"{source}: knob {key_name(name)!r}: value {knob_text(value)} is given twice",
                                 hint=f"list each value once, e.g. {name}={_example(name, table)}")
            if window_too_small({name: value}, block_size or DEFAULT_BLOCK_SIZE, table):
                block = block_size or DEFAULT_BLOCK_SIZE
                raise UsageError(f"{source}: knob 'window' = {value} is smaller than the block size {block}; "
                                 "SGLang refuses it",
                                 hint=f"use windows >= {block}, or none for a full-context draft cache")
            values.append(value)
        axes.append((name, tuple(values)))
    return SearchSpace(tuple(axes))


def parse_search_space(text: str, knob_map: Mapping[str, Any] | None = None, block_size: int | None = None,
                       source: str = "--space", table: KnobTable | None = None) -> SearchSpace:
    """parse_space for a search: a space of one configuration is refused (nothing to race)."""
    space = parse_space(text, knob_map, block_size, source, table)
    if space.size < 2:
        raise UsageError(f"{source} {text.strip()!r} holds one configuration: nothing to search",
                         hint="give a knob two values or more (budget=4,8,16); to measure one, use ddtune bench")
    return space


def _example(name: str, table: KnobTable | None = None) -> str:
    spec = knob_spec(name, table=table)
    base = spec.hint_value
    if spec.type != "int" or not isinstance(base, int) or isinstance(base, bool):
        return f"{knob_text(base)},none" if spec.nullable else knob_text(base)
    return f"{max(1, base // 2)},{base},{base * 2}"


def example_space(config: ServerConfig) -> str:
    """``ddtune search --help``'s example space, less any knob this config cannot set."""
    known = known_knobs(config.knob_map, config.knob_table)
    return " ".join(axis for axis in EXAMPLE.split() if axis.partition("=")[0] in known)

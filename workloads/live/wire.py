"""The load worker's pipe, derived from its records (workloads/live/events.py): one JSON object per
line, ``{"event": TAG, field: value, ...}`` out of the worker, ``{"cmd": TAG, ...}`` into it, the
settings line untagged. Each field is written as its dataclass holds it and checked against its
declared type on the way in (the other side is another process): a wrong, missing or unknown field,
or an unknown tag, is a ValueError naming it, never a half-built record.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from typing import Any, TypeVar, Union

from workloads.live.events import (DecodeRead, LoadCommand, LoadPaused, LoadProcEvent, LoadResumed, LoadStarted,
                                   LoadStopped, PauseLoad, RequestDone, ResumeLoad, Settings, StatsUpdated, StopLoad)

EVENTS: dict[str, type] = {"started": LoadStarted, "stats": StatsUpdated, "request": RequestDone,
                           "paused": LoadPaused, "resumed": LoadResumed, "stopped": LoadStopped}
COMMANDS: dict[str, type] = {"pause": PauseLoad, "resume": ResumeLoad, "stop": StopLoad, "decode": DecodeRead}
_TAG = {cls: ("event", tag) for tag, cls in EVENTS.items()} | {cls: ("cmd", tag) for tag, cls in COMMANDS.items()}

T = TypeVar("T")


def encode(record: LoadProcEvent | LoadCommand | Settings) -> str:
    """One line (with its newline) for a record; tuples go as lists, floats exactly."""
    key, tag = _TAG.get(type(record), (None, None))
    body = _fields_of(record)
    return json.dumps({key: tag, **body} if key else body, separators=(",", ":"), default=_fields_of) + "\n"


def _fields_of(record: object) -> dict[str, Any]:
    """A dataclass's fields by name, shallow: json writes what they hold (a nested record through this
    again, as ``default``). Not ``dataclasses.asdict``, which deep-copies every value of every message."""
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"{type(record).__name__} is not a record the pipe carries")
    return {name: getattr(record, name) for name, *_ in _fields(type(record))}


def _object(line: bytes | str, what: str) -> dict:
    try:
        raw = json.loads(line)
    except ValueError:
        raise ValueError(f"{what} is not JSON") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{what} is not a JSON object")
    return raw


def _tagged(line: bytes | str, key: str, kinds: dict[str, type], what: str) -> object:
    raw = _object(line, "the line")
    tag = raw.pop(key, None)
    if not isinstance(tag, str):
        raise ValueError(f"no {key!r} tag")
    if tag not in kinds:
        raise ValueError(f"unknown {what} {tag!r}")
    return build(kinds[tag], raw, tag)


def decode_event(line: bytes | str) -> LoadProcEvent:
    return typing.cast(LoadProcEvent, _tagged(line, "event", EVENTS, "event"))


def decode_command(line: bytes | str) -> LoadCommand:
    return typing.cast(LoadCommand, _tagged(line, "cmd", COMMANDS, "command"))


def decode_settings(line: bytes | str) -> Settings:
    return build(Settings, _object(line, "the settings line"), "settings")


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool, bool], ...]:
    """Per field of ``cls``, once per class (the pipe carries a message per request, and
    ``get_type_hints`` re-evaluates every annotation): its name, its type, whether it may be None
    (so left out), whether it is required."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], type(None) in typing.get_args(hints[f.name]),
                  f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                 for f in dataclasses.fields(cls))


def build(cls: type[T], raw: Any, where: str) -> T:
    """``cls`` from a JSON object, each field checked against its type (one that may be None may be
    left out)."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    fields = _fields(typing.cast(type, cls))
    unknown = set(raw).difference(name for name, *_ in fields)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    values = {}
    for name, tp, optional, required in fields:
        if name in raw:
            values[name] = _value(tp, raw[name], f"{where}: '{name}'")
        elif optional:
            values[name] = None  # an optional field may be left out
        elif required:
            raise ValueError(f"{where}: '{name}' is missing")
    return cls(**values)


def _value(tp: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1:
            return _value(kinds[0], value, where)
        raise TypeError(f"{where}: a union the wire does not carry: {tp}")
    if tp is bool and isinstance(value, bool):
        return value
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if tp is str and isinstance(value, str):
        return value
    if origin is tuple and isinstance(value, list):
        return tuple(_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict and isinstance(value, dict):
        return {_value(args[0], k, where): _value(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return build(typing.cast(type, tp), value, where)
    kind = _KINDS.get(tp, getattr(tp, "__name__", str(tp)))
    raise ValueError(f"{where} must be {kind}, got {json.dumps(value)[:40]}")


_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}

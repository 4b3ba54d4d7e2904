"""The workload commands' numbers and server URL, checked where a plan read back checks them: a count
never exceeds what its own resume would accept (``PLAUSIBLE``), a rate stays within ``RATES``, so a
run is never started with a number that overflows a bound or fills memory (10**400 streams)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backends.core import DdtuneError
from backends.core import server_base
from workloads.bench.plan import RATES
from workloads.runs.checks import PLAUSIBLE


def _number(text: str, cast: Callable[[str], Any], ok: Callable[[Any], bool], expected: str, bound: str) -> Any:
    try:
        value = cast(text)
    except ValueError:
        raise ValueError(f"expected {expected}, got {text[:40]!r}") from None
    if not ok(value):
        raise ValueError(f"must be {bound}, got {text if len(text) <= 40 else text[:37] + '...'}")
    return value


def option_value(name: str, text: str, low: int = 1) -> Any:
    """``text`` as option ``name`` takes it; ValueError with the one line to say otherwise. ``name``:
    one of ``PLAUSIBLE``'s counts (an integer from ``low`` to the most a plan may hold), ``rate`` (a
    request rate or a burstiness), ``seconds`` (more than 0) or ``url`` (the server's base URL: a
    /v1 suffix is the server at its root)."""
    if name == "url":
        try:
            return server_base(text, check=True)
        except DdtuneError as exc:
            raise ValueError(f"{exc.message}; expected http://HOST:PORT") from None
    if name == "seconds":
        return _number(text, float, lambda v: v > 0, "a number of seconds", "more than 0")
    if name == "rate":
        least, most = RATES
        return _number(text, float, lambda v: least <= v <= most, "a number", f"from {least:g} to {most:g}")
    top = PLAUSIBLE[name]
    return _number(text, int, lambda v: low <= v <= top, "an integer", f"from {low} to {top:,}")

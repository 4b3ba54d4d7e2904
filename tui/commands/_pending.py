"""Shared body for subcommands whose issue has not landed yet."""

from __future__ import annotations

from backends.errors import DdtuneError


def not_yet(name: str, issue: str) -> int:
    raise DdtuneError(f"'ddtune {name}' is not built yet", hint=f"it arrives with the {issue} issue")

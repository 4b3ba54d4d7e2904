"""One classifier for server log lines (placeholder until the log-view branch lands)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from backends.logparse import parse_line


@dataclass(frozen=True)
class LogLine:
    text: str
    kind: str
    event: object | None = None


def classify(text: str, event: object | None) -> str:
    return "info"


def read_lines(texts: Iterable[str]) -> list[LogLine]:
    out = []
    for text in texts:
        event = parse_line(text)
        out.append(LogLine(text, classify(text, event), event))
    return out

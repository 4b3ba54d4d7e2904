"""The prefixes that log collectors put before SGLang's own line, and how to take them off.

- docker compose: a ``name  | `` tag (``docker compose logs``), with ``-t`` a timestamp after it;
- ``docker logs -t`` and ``kubectl logs --timestamps``: an RFC 3339 timestamp
  (``2026-11-30T09:00:01.123456789Z``, or with an offset); ``kubectl logs --prefix`` puts
  ``[pod/name/container]`` first;
- journald's short formats: ``Nov 30 09:00:01 host ident[pid]: `` (``-o short``, ``short-precise``
  with microseconds) and ``2026-11-30T09:00:01+0000 host ident[pid]: `` (``short-iso``).

A compose tag right after a collector's prefix (``docker compose up`` under systemd) is taken off
too. Pure; ``backends.logs.parse`` calls these only for lines whose first characters can start one.
"""

from __future__ import annotations

import re

COMPOSE = re.compile(r"[A-Za-z0-9][\w.-]*\s*\| ")
# docker/kubectl: 2026-11-30T09:00:01.123456789Z (or an offset); journald -o short-iso adds "host ident[pid]: "
_OUTER_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?(?: +|$)"
                       r"(?:[\w.-]+ [\w.@/-]+\[\d+\]: ?)?")
# journald -o short / short-precise: "Nov 30 09:00:01[.123456] host ident[pid]: "
MONTH_INITIALS = frozenset("JFMASOND")
MONTHS = frozenset(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))
_JOURNAL = re.compile(r"\w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ [^\s\[\]:]+(?:\[\d+\])?: ?")
_K8S_PREFIX = re.compile(r"\[pod/[^\]\s]+\] ")


def strip_compose(line: str) -> str:
    """``line`` without a leading docker-compose ``name  | `` tag (a tqdm bar's ``|`` is not one)."""
    m = COMPOSE.match(line)
    if m is None or line.startswith(("Capturing", "Multi", "Loading")):
        return line
    return line[m.end():].lstrip()


def strip_collector(line: str) -> str:
    """``line`` without the prefixes a log collector adds (kubectl's ``[pod/...]``, then a
    docker/kubectl/journald timestamp), and without a compose tag right after them."""
    if line[0] == "[":
        m = _K8S_PREFIX.match(line)
        if m is None:
            return line
        line = line[m.end():]
    if line[:1].isdigit():
        m = _OUTER_TS.match(line) if line[10:11] == "T" else None
    else:
        m = _JOURNAL.match(line) if line[:3] in MONTHS else None
    if m is not None:
        line = line[m.end():].lstrip()
    return strip_compose(line) if "| " in line[:64] else line

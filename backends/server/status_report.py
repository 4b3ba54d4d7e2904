"""``ddtune status``'s use case: the managed server as it stands, judged, in one typed ``StatusReport``.

The record (phase, pid, knobs, what the server reported, each knob's check), the guards judged on its
recent log (the collapse alarm), its acceptance (the /metrics counters over its lifetime, else its
recent ``Decode batch`` lines) and the servers a parallel sweep left in its lanes. The command prints
it, or its ``to_json`` (the --json document, whose shape scripts read)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backends.core.phase import Phase
from backends.knobs.spec import knob_text
from backends.knobs.verify import KnobCheck
from backends.logs.alarms import Alarm
from backends.record.state import ServerState

LOG_ACCEPT_S = 60.0  # the recent decode lines status weighs when the server has no counters
RECENT_LOG_BYTES = 1 << 20  # the tail of the server log that status judges the guards on
_SPEC_FLAGS = ("--speculative-algorithm", "--spec-type")  # SGLang's and llama-server's (backends.knobs.engine)


@dataclass(frozen=True)
class ServerAcceptance:
    """A speculative server's tokens per verify step and where it was read: ``counters`` (/metrics,
    over the server's lifetime: ``tokens``, ``verify_calls``, and llama.cpp's own ``drafts``) or
    ``log`` (recent Decode batch lines, weighted by #running-req)."""

    value: float
    source: str
    over: str
    tokens: float | None = None
    verify_calls: float | None = None
    drafts: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"value": self.value, "source": self.source, "over": self.over}
        if self.source == "counters":
            doc |= {"tokens": self.tokens, "verify_calls": self.verify_calls}
            if self.drafts is not None:
                doc["drafts"] = self.drafts
        else:
            doc["weight"] = "#running-req (verify calls per line)"
        return doc


@dataclass(frozen=True)
class LaneStatus:
    lane: int
    pid: int | None
    port: int | None
    gpus: tuple[str, ...]
    phase: Phase
    sweep: str | None

    def to_json(self) -> dict[str, Any]:
        return {"lane": self.lane, "pid": self.pid, "port": self.port, "gpus": list(self.gpus), "phase": self.phase,
                "sweep": self.sweep}


@dataclass(frozen=True)
class StatusReport:
    """The server as ``status`` shows it; ``state`` is None when none is recorded (phase "stopped")."""

    state: ServerState | None
    backend: str
    url: str
    port: int | None
    knobs: dict[str, Any]
    alarms: tuple[Alarm, ...]
    acceptance: ServerAcceptance | None
    lanes: tuple[LaneStatus, ...]

    @property
    def phase(self) -> Phase:
        return self.state.phase if self.state is not None else Phase.STOPPED

    @property
    def checks(self) -> tuple[KnobCheck, ...]:
        return tuple(self.state.checks) if self.state is not None else ()

    def knob_texts(self) -> dict[str, str]:
        """Each knob as the config writes it (none for a cleared one), by name."""
        return {k: knob_text(v) for k, v in sorted(self.knobs.items())}

    def to_json(self) -> dict[str, Any]:
        from backends.core.apikey import redact_argv

        s = self.state
        doc: dict[str, Any] = {
            "backend": self.backend, "engine": s.engine if s else None, "pid": s.pid if s else None,
            "phase": self.phase, "url": self.url, "knobs": dict(self.knobs),
            "effective": dict(s.effective) if s else {}, "checks": [c.to_json() for c in self.checks],
            "mismatches": list(s.mismatches) if s else [], "reason": s.reason if s else None,
            "log_path": s.log_path if s else None, "port": self.port, "started_at": s.started_at if s else None,
            "ready_at": s.ready_at if s else None, "alarms": [a.to_json() for a in self.alarms],
            "acceptance": self.acceptance.to_json() if self.acceptance is not None else None,
        }
        if s is not None:
            doc["argv"] = list(redact_argv(s.argv))
        doc["lanes"] = [lane.to_json() for lane in self.lanes]
        return doc


def server_status(config, note: Callable[[str], None] | None = None) -> StatusReport:
    """The managed server of ``config``'s state dir, as it stands now, with its guards and acceptance
    judged when it is ready, and the lanes' servers. ``note`` hears what reading the records found."""
    from backends.server.lanes import lane_servers
    from backends.server.snapshot import current_server

    state = current_server(note)
    lanes = tuple(LaneStatus(s.index, s.state.pid, s.state.port, tuple(s.gpus),
                             s.state.phase if s.alive else Phase.STALE, s.sweep) for s in lane_servers(note))
    if state is None:
        return StatusReport(None, config.backend, config.base_url, config.port, dict(config.knobs), (), None, lanes)
    if state.phase != Phase.READY:
        return StatusReport(state, state.backend, state.url, state.port, dict(state.knobs), (), None, lanes)
    # read once, and only for a speculative server: the guards and the acceptance's fallback judge
    # its decode lines; a plain server has neither
    lines = _recent_lines(state) if _speculative(state) else []
    return StatusReport(state, state.backend, state.url, state.port, dict(state.knobs),
                        tuple(recent_alarms(state, lines)), server_acceptance(state, lines), lanes)


def _speculative(state) -> bool:
    args = state.argv
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag in _SPEC_FLAGS:
            value = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            return value.lower() != "none"
    return False


def server_acceptance(state, lines: list[str] | None = None) -> ServerAcceptance | None:
    """A speculative server's acceptance with its source: its /metrics counters (over its lifetime),
    else its recent ``Decode batch`` lines' accept len (the last LOG_ACCEPT_S of log time, weighted by
    #running-req: backends/logs/acceptance.py); None for a plain server or without either. ``lines``:
    the log's recent lines when the caller has read them already (else read here, when needed)."""
    import asyncio

    import httpx

    from backends.core.answers import fetch_once
    from backends.logs.acceptance import (SpecCounters, counter_acceptance, draft_counters, log_acceptance,
                                          parse_counters)
    from backends.logs.events import DecodeBatch
    from backends.logs.parse import parse_line

    if not _speculative(state):
        return None
    drafts = None
    try:
        answer = asyncio.run(fetch_once(state.url.rstrip("/") + "/metrics", idle=3.0))  # /metrics needs no API key
        counters = parse_counters(answer.text) if answer.status == 200 else None
        drafts = draft_counters(answer.text) if answer.status == 200 else None
    except httpx.HTTPError:
        counters = None
    value = counter_acceptance(SpecCounters(0.0, 0.0), counters)
    if value is not None and counters is not None:
        return ServerAcceptance(round(value, 4), "counters", "the server's lifetime", counters.tokens,
                                counters.verify_calls,
                                drafts.to_json() if drafts is not None else None)  # llama.cpp: per draft position too
    recent = _recent_lines(state) if lines is None else lines
    decodes = [(e.time_s, e.accept_len, e.running_req) for e in map(parse_line, recent)
               if isinstance(e, DecodeBatch) and e.is_lead and e.time_s is not None]
    if not decodes:
        return None
    last = decodes[-1][0]
    value = log_acceptance(decodes, last - LOG_ACCEPT_S, last)
    if value is None:
        return None
    return ServerAcceptance(round(value, 4), "log", f"the last {LOG_ACCEPT_S:.0f} s of decode lines")


def recent_alarms(state, lines: list[str]) -> list[Alarm]:
    """The guards, judged on the recent log (``lines``: its last MiB): what a speculative server's decode
    lines say."""
    from backends.logs.alarms import alarms_from_log

    return alarms_from_log(lines, _speculative(state)) if lines else []


def _recent_lines(state) -> list[str]:
    """The server log's last RECENT_LOG_BYTES, as lines."""
    from backends.logs.span import recent_log_lines

    return recent_log_lines(state.log_path, RECENT_LOG_BYTES)

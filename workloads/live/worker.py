"""The live coding load in a process of its own: ``python -m workloads.live.worker``.

The console's UI process only renders; this process runs the LoadEngine (streaming client, windows)
and grades the answers, whose sandboxes are its own child processes. workloads/live/proc.py is the
parent side. The pipe protocol, one JSON object per line:

stdin, first line: the settings ``{"url", "api_key", "concurrency", "max_tokens", "prompts", "problems",
"tick_s", "window_s", "record"}`` (``api_key``, ``prompts``, ``problems``, ``tick_s``, ``window_s`` and
``record`` may be null or left out; ``prompts``: the source, default coding; ``problems``: record ids;
``window_s``: the rolling window, 5 s). The key travels only here, never
in argv or the environment. Later lines are commands: ``{"cmd": "pause", "why": "restart"}`` (``why``:
what the recorded run of this configuration was cut short by), ``{"cmd": "resume"}``,
``{"cmd": "stop", "reason": "..."}``,
``{"cmd": "decode", "t", "accept_len", "running_req"}`` (a ``Decode batch`` line the console's log
tail read, ``t`` monotonic: acceptance's last source). End of stdin means the parent is gone: the worker stops at once,
drops the grading it has not started, and exits, so it never outlives the console.

stdout: events, each with an ``"event"`` key: ``started``, ``stats`` (the engine's LoadStats, as
it reported them), ``request`` (one finished, failed or cancelled request, with its verdict),
``paused``, ``resumed`` and, last, ``stopped`` (reason, error, final stats). Nothing else is ever
written there: stray prints go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from functools import partial
from dataclasses import asdict, dataclass
from typing import Any
from collections.abc import Callable

from workloads.live.load import (LoadEngine, LoadEvent, LoadPaused, LoadResumed, LoadStats, LoadStopped,
                                 RequestCancelled, RequestFinished, StatsUpdated)

Emit = Callable[[dict], None]


@dataclass(frozen=True)
class Settings:
    url: str
    api_key: str | None
    concurrency: int
    max_tokens: int
    problems: tuple[str, ...] | None = None
    tick_s: float = 1.0
    record: bool = False   # write runs (kind load) under runs/, one per server configuration
    window_s: float = 5.0  # the rolling window of the rates and the length of the closed windows
    prompts: str | None = None  # the prompt source (workloads/prompts); None: the coding problems


def parse_settings(line: bytes) -> Settings:
    """The first stdin line; ValueError naming the bad field."""
    try:
        raw = json.loads(line)
    except ValueError:
        raise ValueError("the settings line is not JSON") from None
    if not isinstance(raw, dict):
        raise ValueError("the settings line is not a JSON object")
    url, key, problems, tick = raw.get("url"), raw.get("api_key"), raw.get("problems"), raw.get("tick_s", 1.0)
    record = raw.get("record", False)
    window = raw.get("window_s", 5.0)
    if window is None:
        window = 5.0
    if not isinstance(record, bool):
        raise ValueError("settings: 'record' must be true or false")
    if not isinstance(url, str) or not url:
        raise ValueError("settings: 'url' must be a non-empty string")
    if key is not None and not isinstance(key, str):
        raise ValueError("settings: 'api_key' must be a string or null")
    for name in ("concurrency", "max_tokens"):
        value = raw.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"settings: '{name}' must be a whole number >= 1")
    if problems is not None and (not isinstance(problems, list) or not all(isinstance(p, str) for p in problems)):
        raise ValueError("settings: 'problems' must be a list of problem ids or null")
    source = raw.get("prompts")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        raise ValueError("settings: 'prompts' must be a prompt source (coding, story, humaneval, a file) or null")
    if not isinstance(tick, (int, float)) or isinstance(tick, bool) or tick <= 0:
        raise ValueError("settings: 'tick_s' must be a number of seconds above 0")
    if not isinstance(window, (int, float)) or isinstance(window, bool) or not 0 < window < 3600:
        raise ValueError("settings: 'window_s' must be a number of seconds above 0 and below 3600")
    return Settings(url, key or None, raw["concurrency"], raw["max_tokens"],
                    tuple(problems) if problems else None, float(tick), record, float(window), source)


def stats_json(stats: LoadStats) -> dict:
    return asdict(stats)


def encode(event: LoadEvent) -> dict:
    """One engine event as its wire record."""
    if isinstance(event, StatsUpdated):
        return {"event": "stats", "stats": stats_json(event.stats)}
    if isinstance(event, RequestFinished):
        r, grade = event.result, event.grade
        return {"event": "request", "problem": event.problem, "ok": r.ok, "tokens": r.output_tokens,
                "tok_s": r.decode_tok_s or 0.0, "accept_len": r.acceptance, "ttft_s": r.ttft_s, "e2e_s": r.e2e_s,
                "verdict": grade.verdict if grade else ("error" if not r.ok else "-"),
                "detail": grade.detail if grade else r.error}
    if isinstance(event, RequestCancelled):
        return {"event": "request", "problem": event.problem, "ok": False, "tokens": event.tokens, "tok_s": 0.0,
                "accept_len": None, "ttft_s": None, "e2e_s": None, "verdict": "cancelled",
                "detail": "cancelled: the load was paused"}
    if isinstance(event, LoadPaused):
        return {"event": "paused", "cancelled": event.cancelled, "stats": stats_json(event.stats)}
    if isinstance(event, LoadResumed):
        return {"event": "resumed", "stats": stats_json(event.stats)}
    if isinstance(event, LoadStopped):
        return {"event": "stopped", "reason": event.reason, "error": event.error, "stats": stats_json(event.stats)}
    raise TypeError(f"unknown load event {event!r}")


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def _follow_commands(reader: asyncio.StreamReader, engine: LoadEngine, recorder=None) -> None:
    """Obey the parent's commands until its end of the pipe closes."""
    told_to_stop = False
    pausing: asyncio.Task | None = None
    while True:
        try:
            line = await reader.readline()
        except (ValueError, ConnectionError):  # an overlong line or a broken pipe: treat as gone
            line = b""
        if not line:
            # a stop the parent asked for grades what is in; a vanished parent gets no more grading
            engine.stop("parent-gone", drop_grading=not told_to_stop)
            return
        try:
            command = json.loads(line)
            name = command.get("cmd") if isinstance(command, dict) else None
        except ValueError:
            name = None
        if name == "stop":
            told_to_stop = True
            reason = command.get("reason")
            engine.stop(reason if isinstance(reason, str) and reason else "stopped")
        elif name == "pause" and (pausing is None or pausing.done()):
            why = command.get("why")
            pausing = asyncio.ensure_future(_pause(engine, recorder, why if isinstance(why, str) and why
                                                   else "restart"))
        elif name == "decode":
            _decode(engine, command)
        elif name == "resume":
            if pausing is not None and not pausing.done():
                await pausing  # report the cancelled requests and "paused" before "resumed"
            if recorder is not None and recorder.store is None:
                engine.store = await _open_run(recorder, engine)
            engine.resume()
        else:
            print(f"ddtune load worker: ignored an unknown command: {line[:200]!r}", file=sys.stderr)


def _decode(engine: LoadEngine, command: dict) -> None:
    """``{"cmd": "decode", "t", "accept_len", "running_req"}``: a decode line the parent's log tail read."""
    t, accept, running = command.get("t"), command.get("accept_len"), command.get("running_req")
    if isinstance(t, (int, float)) and isinstance(accept, (int, float)) and isinstance(running, int) \
            and not isinstance(running, bool):
        engine.add_decode(float(t), float(accept), running)


async def _pause(engine: LoadEngine, recorder, why: str) -> None:
    await engine.pause()
    if recorder is not None:  # the server is about to change: this configuration's run ends here, cut short
        engine.store = None
        recorder.close(engine.snapshot(), why, interrupted=True)


async def _open_run(recorder, engine: LoadEngine | None):
    try:
        return await recorder.open(engine.snapshot() if engine is not None else None)
    except Exception as exc:  # noqa: BLE001 - recording must never stop the load; say why on stderr
        print(f"ddtune load worker: not recording this run: {exc}", file=sys.stderr)
        return None


async def serve(emit: Emit) -> int:
    """Read the settings, run the load until told to stop, report every event. The exit status."""
    from workloads.client.stream import StreamingClient
    from workloads.live.work import load_work

    reader = await _stdin_reader()
    try:
        settings = parse_settings(await reader.readline())
        work = load_work(settings.prompts, settings.problems)
    except Exception as exc:  # noqa: BLE001 - any bad setting ends the worker with a message, never a traceback
        emit({"event": "stopped", "reason": "bad-settings", "error": getattr(exc, "message", None) or str(exc),
              "stats": None})
        return 2
    async with StreamingClient(settings.url, api_key=settings.api_key, concurrency=settings.concurrency) as client:
        recorder = None
        if settings.record:
            from workloads.live.record import LoadRecorder

            recorder = LoadRecorder(client, {"concurrency": settings.concurrency, "duration_s": None,
                                             "max_tokens": settings.max_tokens, "prompts": work.name,
                                             "problems": list(settings.problems or ()) or None,
                                             "multi_turn": "live reply" if work.prompts.multi_turn else None},
                                    work.prompts.describe())
        engine = LoadEngine(client, work.records, problems=work.problems, prompts=work.name,
                            concurrency=settings.concurrency, max_tokens=settings.max_tokens,
                            on_event=lambda event: emit(encode(event)), tick_s=settings.tick_s,
                            roll_s=settings.window_s)
        if recorder is not None:  # provenance also tells the client whether the server is speculative
            engine.store = await _open_run(recorder, None)
            run_dir = str(recorder.store.path) if recorder.store else None
        else:
            run_dir = None
            from workloads.runs.provenance import server_provenance

            try:
                await server_provenance(client)
            except Exception as exc:  # noqa: BLE001 - the load runs anyway; acceptance then as the chunks say
                print(f"ddtune load worker: /server_info unreadable: {exc}", file=sys.stderr)
        loop = asyncio.get_running_loop()
        for sig, reason in ((signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted"),
                            (signal.SIGHUP, "interrupted")):  # a signal means hurry: drop the grading
            loop.add_signal_handler(sig, partial(engine.stop, reason, drop_grading=True))
        emit({"event": "started", "pid": os.getpid(), "concurrency": settings.concurrency,
              "problems": [r.id for r in work.records][:1000], "run_dir": run_dir, "prompts": work.name})
        commands = asyncio.ensure_future(_follow_commands(reader, engine, recorder))
        stopped: list[LoadStopped] = []
        engine.add_listener(lambda e: stopped.append(e) if isinstance(e, LoadStopped) else None)
        try:
            stats = await engine.run()
        finally:
            commands.cancel()
            await asyncio.gather(commands, return_exceptions=True)
        if recorder is not None:
            last = stopped[-1] if stopped else None
            recorder.close(stats, last.reason if last else "stopped", last.error if last else None)
    return 0


def _writer(out) -> Emit:
    def emit(record: dict[str, Any]) -> None:
        try:
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            out.flush()
        except (BrokenPipeError, ValueError):
            pass  # the parent is gone; stdin's end of file stops the load
    return emit


def main() -> int:
    # The protocol keeps the real stdout to itself; anything else printed lands on stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return asyncio.run(serve(_writer(out)))


if __name__ == "__main__":
    sys.exit(main())

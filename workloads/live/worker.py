"""The live coding load in a process of its own: ``python -m workloads.live.worker``.

The console's UI process only renders; this process runs the LoadEngine (streaming client, windows)
and grades the answers, whose sandboxes are its own child processes. workloads/live/proc.py is the
parent side. The pipe: one JSON object per line, each a record of workloads/live/events.py
written and checked by workloads/live/wire.py.

stdin, first line: the ``Settings`` (the API key travels only here, never in argv or the
environment); later lines are commands: ``PauseLoad`` (``why``: what the recorded run of this
configuration was cut short by), ``ResumeLoad``, ``StopLoad``, ``DecodeRead`` (a ``Decode batch``
line the console's log tail read: acceptance's last source). End of stdin means the parent is
gone: the worker stops at once, drops the grading it has not started, and exits, so it never
outlives the console.

stdout: the events: ``LoadStarted``, ``StatsUpdated`` (the engine's LoadStats, as it reported
them), ``RequestDone`` (one finished, failed or cancelled request, with its verdict),
``LoadPaused``, ``LoadResumed`` and, last, ``LoadStopped``. Nothing else is ever written there:
stray prints go to stderr.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from functools import partial
from typing import assert_never
from collections.abc import Callable

from workloads.live.events import (DecodeRead, LoadProcEvent, LoadStarted, LoadStopped, PauseLoad, ResumeLoad,
                                   StopLoad, empty_stats)
from workloads.live.load import LoadEngine
from workloads.live.wire import decode_command, decode_settings, encode

Emit = Callable[[LoadProcEvent], None]


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
            command = decode_command(line)
        except ValueError as exc:
            print(f"ddtune load worker: ignored a command: {exc}: {line[:200]!r}", file=sys.stderr)
            continue
        match command:
            case StopLoad(reason):
                told_to_stop = True
                engine.stop(reason or "stopped")
            case PauseLoad(why):
                if pausing is None or pausing.done():
                    pausing = asyncio.ensure_future(_pause(engine, recorder, why or "restart"))
            case DecodeRead(t, accept_len, running_req):
                engine.add_decode(float(t), float(accept_len), running_req)
            case ResumeLoad():
                if pausing is not None and not pausing.done():
                    await pausing  # report the cancelled requests and "paused" before "resumed"
                if recorder is not None and recorder.store is None:
                    engine.store = await _open_run(recorder, engine)
                engine.resume()
            case _:
                assert_never(command)


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
        settings = decode_settings(await reader.readline())  # ValueError naming the bad field
        work = load_work(settings.prompts, settings.problems)
    except Exception as exc:  # noqa: BLE001 - any bad setting ends the worker with a message, never a traceback
        emit(LoadStopped("bad-settings", getattr(exc, "message", None) or str(exc), empty_stats(0)))
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
                            on_event=emit, tick_s=settings.tick_s,
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
        emit(LoadStarted(os.getpid(), settings.concurrency, tuple(r.id for r in work.records)[:1000], run_dir,
                         work.name))
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
    def emit(event: LoadProcEvent) -> None:
        try:
            out.write(encode(event))
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

"""ServerSession on the real simulator: typed events in order, one log reader, and a session that
follows what another ddtune process does to the same server (a headless restart beside it)."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from backends.core.errors import ConfigError
from backends.server.session import ServerSession
from backends.server.events import (
    CommandRefused, ConfigChanged, LogBatch, NoteAdded, PhaseChanged, PidChanged, Settled, Stopped, Verified,
)
from backends.logs.events import DraftRunner
from backends.record.lock import LOCK_FILE
from backends.server.record import load_state
from tests.backends.lifecycle_support import PHASED, config, write_config
from tests.helpers import REPO, ddtune_cmd, ddtune_env


class Recorder:
    def __init__(self, session: ServerSession) -> None:
        self.events: list = []
        session.subscribe(self.events.append)

    def of(self, kind) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def phases(self) -> list[str]:
        return [e.progress.phase for e in self.of(PhaseChanged)]

    def lines(self) -> list[str]:
        return [line.text for batch in self.of(LogBatch) for line in batch.lines]

    async def wait(self, predicate, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; events: {self.events[-15:]}")
            await asyncio.sleep(0.05)


@asynccontextmanager
async def watching(session: ServerSession, groups, stop_after: bool = False):
    """The session's server up (its group tracked) and the session watching other processes:
    ``(recorder, the first state, how many events came before the watch)``; closed after."""
    seen = Recorder(session)
    try:
        first = await session.up()
        groups.track(first.pgid)
        session.watch()
        yield seen, first, len(seen.events)
    finally:
        if stop_after:
            await session.stop()
        await session.close()


async def test_up_streams_typed_events_in_order(tmp_path, state_dir, groups):
    session = ServerSession(config(tmp_path, extra=PHASED))
    seen = Recorder(session)
    try:
        state = await session.up()
        groups.track(state.pgid)
        assert state.phase == "ready", state.reason
        launched = seen.of(PidChanged)
        assert [(e.pid, e.by) for e in launched] == [(state.pid, "ddtune")]
        phases = seen.phases()
        assert phases.index("loading-weights") < phases.index("capturing-graphs") < phases.index("warmup")
        checks = {c.name: c for c in seen.of(Verified)[0].checks}
        window = checks["window"]
        assert (window.requested, window.effective, window.status) == (2048, 2048, "verified")
        settled = seen.of(Settled)
        assert len(settled) == 1 and settled[0].state.pid == state.pid and settled[0].state.phase == "ready"
        # the one reader keeps reading after ready: the pane gets the whole log, parsed once
        await seen.wait(lambda: any("ready to roll" in t for t in seen.lines()), "the ready line in a batch")
        started = [line for batch in seen.of(LogBatch) for line in batch.lines if "Started server process" in line.text]
        assert len(started) == 1 and type(started[0].event).__name__ == "ServerStarted"
        # verification read that parse: the draft runner line is kept with its event
        runner = session.log.facts.marked["Initialized DFLASH draft runner"]
        assert isinstance(runner.event, DraftRunner) and runner.event.window_size == 2048
        assert session.state is state
    finally:
        await session.stop()
        await session.close()
    assert seen.of(Stopped) and load_state() is None


async def test_the_lines_that_led_to_ready_arrive_before_the_settle(tmp_path, state_dir, groups):
    # a console shows the log lines with the phase they explain: the draft-runner line the window was
    # verified from must be in a LogBatch before Verified/Settled, however slow the 4 Hz batching is
    session = ServerSession(config(tmp_path, extra=PHASED))
    session.log.flush_s = 3600.0  # the periodic flush never comes during this test
    seen = Recorder(session)
    try:
        state = await session.up()
        groups.track(state.pgid)
        assert state.phase == "ready", state.reason
        settled_at = seen.events.index(seen.of(Settled)[0])
        before = [line.text for e in seen.events[:settled_at] if isinstance(e, LogBatch) for line in e.lines]
        assert any("draft_window_size=2048" in text for text in before), seen.events[:settled_at][-5:]
    finally:
        await session.stop()
        await session.close()


async def test_bad_knob_is_refused_as_an_event_and_changes_nothing(tmp_path, state_dir, groups):
    session = ServerSession(config(tmp_path))
    seen = Recorder(session)
    try:
        first = await session.up()
        groups.track(first.pgid)
        with pytest.raises(ConfigError):
            await session.restart(knobs={"window": 8})  # below the block size: SGLang would refuse it
        refused = seen.of(CommandRefused)
        assert len(refused) == 1 and "'window' = 8" in refused[0].message and "window >=" in refused[0].hint
        assert load_state().pid == first.pid and load_state().phase == "ready"
    finally:
        await session.stop()
        await session.close()


async def run_cli(*args: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(*ddtune_cmd(*args), cwd=REPO, env=ddtune_env(),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


async def test_a_headless_restart_beside_the_session_is_followed_live(tmp_path, state_dir, groups):
    """The console's session, with no resync: another ddtune restarts the server with new knobs;
    the session reports who did it, the phases of the new start, the new pid and its verified knobs."""
    config_file = write_config(tmp_path, extra=PHASED)
    from backends.knobs.config import load_config

    session = ServerSession(load_config(config_file))
    async with watching(session, groups) as (seen, first, before):
        code, out = await run_cli("--config", str(config_file), "restart", "--set", "window=1024", cwd=tmp_path)
        groups.track_state()
        assert code == 0, out
        new = load_state()
        assert new.pid != first.pid and new.phase == "ready"
        await seen.wait(lambda: session.state is not None and session.state.pid == new.pid
                        and session.state.phase == "ready", "the session to settle on the new pid")
        later = seen.events[before:]
        notes = [e.text for e in later if isinstance(e, NoteAdded)]
        assert any("another ddtune" in n and "restarting" in n for n in notes), notes
        launched = [e for e in later if isinstance(e, PidChanged)]
        assert [(e.pid, e.by) for e in launched] == [(new.pid, "another ddtune")]
        phases = [e.progress.phase for e in later if isinstance(e, PhaseChanged)]
        assert "stopping-old" in phases and "loading-weights" in phases and phases[-1] == "ready", phases
        changed = [e for e in later if isinstance(e, ConfigChanged)]
        assert changed and changed[0].knobs["window"] == 1024 and "window 2048 -> 1024" in changed[0].label
        settled = [e for e in later if isinstance(e, Settled)]
        assert settled[-1].state.pid == new.pid and settled[-1].state.effective["window_size"] == 1024
        assert session.config.knobs["window"] == 1024
        # and a headless down beside it is reported as a stop
        code, out = await run_cli("--config", str(config_file), "down", cwd=tmp_path)
        assert code == 0, out
        await seen.wait(lambda: session.state is None and seen.of(Stopped), "the stop to be reported")


async def test_a_watching_session_does_not_take_its_own_writes_for_another_ddtune(tmp_path, state_dir, groups):
    """The watcher reacts only to what other processes do. A restart of the session's own (the lock
    taken and released, server.json cleared, written at launch, written at ready) is reported once,
    by ddtune: nothing of it comes back as another ddtune's launch, stop or settle."""
    session = ServerSession(config(tmp_path))
    async with watching(session, groups, stop_after=True) as (seen, _, before):
        new = await session.restart(knobs={"window": 1024})
        groups.track(new.pgid)
        assert new.phase == "ready", new.reason
        # a change of another process's, after ours: once it is heard, every notice before it was
        (state_dir / LOCK_FILE).write_text('{"pid": 1, "action": "probing"}')
        await seen.wait(lambda: any(isinstance(e, NoteAdded) and "(pid 1)" in e.text for e in seen.events),
                        "the foreign lock holder to be reported")
        later = seen.events[before:]
        assert [(e.pid, e.by) for e in later if isinstance(e, PidChanged)] == [(new.pid, "ddtune")]
        assert [e.state.pid for e in later if isinstance(e, Settled)] == [new.pid]
        assert len([e for e in later if isinstance(e, ConfigChanged)]) == 1 and not seen.of(Stopped)
        assert not [e for e in later if isinstance(e, NoteAdded) and "another ddtune" in e.text
                    and "(pid 1)" not in e.text]

"""The console's load as one use case (workloads.live.ConsoleLoad), on a ServerSession running the
simulator: what it hands the console (typed updates), its pause around a restart (requests in flight
come back cancelled, never failed), its resume on a verified server, and leaving with nothing running."""

import asyncio
import time

from backends.core import Phase
from backends.knobs.config import ServerConfig
from backends.server.session import ServerSession
from tests.helpers import free_port
from workloads.live import Comparison, ConsoleLoad, LoadState, RequestDone, StatsUpdated


class Console:
    """What the console gives the use case: a sink for its updates and a worker runner (``load`` and
    ``baseline`` exclusive)."""

    def __init__(self) -> None:
        self.updates: list = []
        self.tasks: dict[str, asyncio.Task] = {}

    def spawn(self, work, group: str) -> None:
        if group in ("load", "baseline") and group in self.tasks:
            self.tasks[group].cancel()
        self.tasks[group] = asyncio.ensure_future(work)

    async def until(self, found, limit_s: float, start: int = 0):
        """The first update from ``start`` on that ``found`` accepts (waits at most ``limit_s``)."""
        deadline, seen = time.monotonic() + limit_s, start
        while time.monotonic() < deadline:
            for update in self.updates[seen:]:
                if found(update):
                    return update
            seen = len(self.updates)
            await asyncio.sleep(0.05)
        raise AssertionError(f"not handed over in {limit_s} s: {self.updates[-5:]}")


def session_on_the_simulator() -> ServerSession:
    return ServerSession(ServerConfig(port=free_port(), extra_args=("--sim-load-seconds", "0.1"),
                                      knobs={"window": 2048}, ready_timeout_s=60))


def test_a_new_source_or_knobs_before_any_load_only_name_what_runs(state_dir):
    console = Console()
    live = ConsoleLoad(session_on_the_simulator(), console.updates.append, console.spawn, lambda: False)
    assert live.config_changed({"window": 1024}, "window 2048 -> 1024") is False  # nothing plotted: no marker
    assert live.ab.current.knobs == {"window": 1024}
    assert live.choose("story") is False and live.choose("story") is False  # not running: nothing restarts
    assert [type(u) for u in console.updates] == [LoadState, Comparison]
    assert console.updates[0] == LoadState(False, None, "story")  # the load line stays as it was
    assert not console.tasks


async def _load_paused_and_resumed(state_dir) -> tuple[Console, ConsoleLoad]:
    session = session_on_the_simulator()
    console = Console()
    live = ConsoleLoad(session, console.updates.append, console.spawn, lambda: True, concurrency=2,
                       max_tokens=64, window_s=2.0)
    try:
        assert (await session.up()).phase == Phase.READY
        assert live.toggle() is True
        on = await console.until(lambda u: isinstance(u, LoadState), 10)
        assert on == LoadState(True, "2 streams of coding", "coding")
        await console.until(lambda u: isinstance(u, RequestDone) and u.ok, 10)
        await console.until(lambda u: isinstance(u, StatsUpdated), 10)
        assert live.config_changed({"window": 1024}, "window 2048 -> 1024") is True  # plotted: marked

        before = len(console.updates)
        live.pause()  # a restart is about to stop the server
        await asyncio.wait_for(live.drained(), 10)
        said = len(console.updates)
        assert console.updates[before] == LoadState(
            True, "paused: the server is restarting; it resumes once the new one is verified", "coding")
        cut = [u for u in console.updates[before:] if isinstance(u, RequestDone)]  # those in flight, cut off
        assert any(u.verdict == "cancelled" for u in cut) and all(u.verdict != "error" for u in cut), cut

        live.server_verified()
        assert console.updates[said] == LoadState(True, "2 streams of coding", "coding")
        await console.until(lambda u: isinstance(u, RequestDone) and u.ok, 10, start=said)
        live.tick()
        comparison = console.updates[-1]
        assert isinstance(comparison, Comparison) and comparison.current.name == "window=1024"
        assert comparison.reference is not None and comparison.reference.name == "window=2048"
    finally:
        await live.close()
        await asyncio.gather(*console.tasks.values(), return_exceptions=True)
        await session.stop()
        await session.close()
    return console, live


def test_the_load_pauses_for_a_restart_resumes_once_verified_and_leaves_nothing(state_dir, groups):
    console, live = asyncio.run(_load_paused_and_resumed(state_dir))
    assert not live.running
    assert console.updates[-1] == LoadState(False, "stopped", "coding")  # leaving: said, not "l starts it again"

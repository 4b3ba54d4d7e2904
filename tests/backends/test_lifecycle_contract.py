"""One contract suite over the sim, sglang (real spawn path, stand-in sglang.launch_server running
the simulator) and endpoint backends, against real processes and sockets."""

import asyncio

import pytest

from backends.core.errors import ServerError
from backends.launch.process import group_members, port_owner
from backends.server.record import load_state
from tests.backends.lifecycle_support import config, headless

BACKENDS = ["sim", "sglang", "endpoint"]


async def first_line_with(lines, needle, timeout=30):
    async def scan():
        async for line in lines:
            if needle in line:
                return line
    return await asyncio.wait_for(scan(), timeout)


async def start(tmp_path, backend, groups):
    """Bring up a server of this backend; for endpoint, attach to a simulator started first."""
    if backend != "endpoint":
        session = headless(config(tmp_path, backend=backend))
        state = await session.up()
        groups.track(state.pgid)
        return session, state
    (tmp_path / "sim").mkdir()
    sim_session = headless(config(tmp_path / "sim", backend="sim"))
    sim_state = await sim_session.up()
    groups.track(sim_state.pgid)
    session = headless(config(tmp_path, backend="endpoint", url=sim_state.url, log_file=sim_state.log_path))
    return session, await session.up()


@pytest.mark.parametrize("backend", BACKENDS)
def test_capability_flags(tmp_path, state_dir, backend):
    kw = {"url": "http://127.0.0.1:1"} if backend == "endpoint" else {}
    b = headless(config(tmp_path, backend=backend, **kw)).backend
    assert (b.CAN_START, b.CAN_STOP) == ((False, False) if backend == "endpoint" else (True, True))
    assert b.NAME == backend


@pytest.mark.parametrize("backend", BACKENDS)
async def test_up_is_ready_verified_and_streams_logs(tmp_path, state_dir, groups, backend):
    session, state = await start(tmp_path, backend, groups)
    assert state.phase == "ready", state.reason
    assert state.mismatches == ()
    assert state.effective["window_size"] == 2048 and state.effective["compact_cache"] is True
    assert session.backend.base_url == state.url
    line = await first_line_with(session.backend.log_lines(state), "Started server process [")
    if backend != "endpoint":
        assert f"[{state.pid}]" in line
        assert port_owner(state.port).pid == state.pid
        assert load_state().pid == state.pid
        assert await session.backend.is_running(state)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_down_stops_the_whole_group_or_refuses(tmp_path, state_dir, groups, backend):
    session, state = await start(tmp_path, backend, groups)
    if backend == "endpoint":
        with pytest.raises(ServerError, match="cannot stop"):
            await session.backend.stop(state)
        return
    stopped = await session.stop()
    assert stopped.pid == state.pid
    assert group_members(state.pgid) == []
    assert port_owner(state.port) is None
    assert load_state() is None
    assert not await session.backend.is_running(state)

"""Failed starts end in phase failed with the fatal line and the log tail, and leave nothing running."""

from backends.launch.process import group_members
from backends.server.record import load_state
from tests.backends.lifecycle_support import FAST, config, headless


async def failed_start(tmp_path, groups, extra, **server):
    session = headless(config(tmp_path, extra=FAST + extra, **server))
    state = await session.up()
    groups.track(state.pgid)
    assert state.phase == "failed"
    assert session.tracker.phase == "failed"
    assert group_members(state.pgid) == []
    assert load_state().phase == "failed"
    return state


async def test_crash_while_loading(tmp_path, state_dir, groups):
    state = await failed_start(tmp_path, groups, ("--sim-fail-at", "load", "--sim-children", "1"))
    assert "--- last log lines ---" in state.reason
    assert "Load weight begin" in state.reason


async def test_oom_at_graph_capture(tmp_path, state_dir, groups):
    state = await failed_start(tmp_path, groups, ("--sim-fail-at", "capture",))
    first = state.reason.splitlines()[0]
    assert "oom" in first.lower() or "out of memory" in first.lower()
    assert "CUDA graph" in state.reason or "cuda graph" in state.reason


async def test_hang_past_the_timeout(tmp_path, state_dir, groups):
    state = await failed_start(tmp_path, groups, ("--sim-hang-at", "load",), ready_timeout_s=3)
    assert "not ready after 3 s" in state.reason and "loading-weights" in state.reason


async def test_bad_flag_value_exits_early_with_sglang_message(tmp_path, state_dir, groups):
    state = await failed_start(tmp_path, groups, ("--speculative-num-draft-tokens", "32",
                                                  "--speculative-dflash-block-size", "16"))
    assert "exited" in state.reason and "they differ" in state.reason

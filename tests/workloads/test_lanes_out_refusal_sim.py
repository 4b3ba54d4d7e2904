"""`ddtune search|sweep --parallel ... --out DIR` with a DIR that already records one is refused before
the lanes are planned: planning stops this state dir's lane servers beyond the new lane count, so a
refusal after it would already have changed something. A real lane server left by an earlier
sweep (lane 5) must outlive the refused command."""

from __future__ import annotations

import json

import pytest

from backends.knobs.config import ServerConfig
from backends.record.lanes import Lane, lane_folder, save_lane
from backends.core.paths import use_server_dir
from backends.launch.process import group_members, is_running
from tests.helpers import free_port_run, run_ddtune
from workloads.search.store import SearchStore
from workloads.sweep.plan import SweepConfig, SweepPlan, SweepStore
from workloads.bench.plan import BenchPlan
from tests.backends.lifecycle_support import headless


@pytest.fixture
async def lane5(state_dir):
    """A live sim server recorded as lane 5 of the state dir (as an earlier --parallel 6 sweep with
    --keep-server leaves it); stopped at the end, and the test fails if it was not running then."""
    config = ServerConfig(port=free_port_run(1), extra_args=("--sim-load-seconds", "0.2"), ready_timeout_s=60,
                          stop_timeout_s=10)
    lane = Lane(5, ("5",), config.port)
    save_lane(lane, "an earlier sweep")
    with use_server_dir(lane_folder(5)):
        state = await headless(config).up()
    assert state.phase == "ready", state.reason
    try:
        yield state
    finally:
        alive = is_running(state.pid, state.create_time)
        with use_server_dir(lane_folder(5)):
            await headless(config).stop()
        assert not group_members(state.pgid)
        assert alive, "the lane 5 server was stopped by the refused command"


def write_config(tmp_path) -> str:
    path = tmp_path / "ddtune.toml"
    path.write_text(f'[server]\nbackend = "sim"\nport = {free_port_run(2)}\n'
                    f'extra_args = ["--sim-load-seconds", "0.2"]\nready_timeout_s = 60\n')
    return str(path)


def untouched(state_dir, lane5, before: bytes, manifest) -> None:
    assert is_running(lane5.pid, lane5.create_time)  # planning would have stopped it (beyond 2 lanes)
    assert sorted(p.name for p in (state_dir / "lanes").iterdir()) == ["5"]  # no lane planned or started
    assert (state_dir / "lanes" / "5" / "server.json").is_file()
    assert manifest.read_bytes() == before


async def test_search_out_holding_a_search_is_refused_before_lanes_are_planned(tmp_path, state_dir, lane5):
    out = tmp_path / "search"
    SearchStore.create({"space": "recorded"}, out)
    before = (out / "search.json").read_bytes()
    r = run_ddtune("--config", write_config(tmp_path), "search", "--space", "budget=4,8", "--parallel", "2",
                   "--gpus", "0,1", "--out", str(out), DDTUNE_STATE_DIR=str(state_dir))
    assert r.returncode == 2, r.stderr
    assert f"--out {out}: a search is already recorded there" in r.stderr
    assert f"--resume --out {out}" in r.stderr and "lane 0" not in r.stderr and "note:" not in r.stderr
    untouched(state_dir, lane5, before, out / "search.json")
    afile = tmp_path / "a-file"
    afile.write_text("x")
    r = run_ddtune("--config", write_config(tmp_path), "search", "--space", "budget=4,8", "--parallel", "2",
                   "--gpus", "0,1", "--out", str(afile), DDTUNE_STATE_DIR=str(state_dir))
    assert r.returncode == 2 and f"--out {afile}: a file, not a folder" in r.stderr, r.stderr
    untouched(state_dir, lane5, before, out / "search.json")


async def test_sweep_out_holding_a_sweep_is_refused_before_lanes_are_planned(tmp_path, state_dir, lane5):
    out = tmp_path / "sweep"
    SweepStore.create(SweepPlan((SweepConfig("b8-t4-w2048", {"budget": 8}),), BenchPlan((60,), (1,))), {}, out)
    before = (out / "sweep.json").read_bytes()
    r = run_ddtune("--config", write_config(tmp_path), "sweep", "b8-t4-w2048", "--parallel", "2", "--gpus", "0,1",
                   "--out", str(out), DDTUNE_STATE_DIR=str(state_dir))
    assert r.returncode == 2, r.stderr
    assert f"--out {out}: a sweep is already recorded there" in r.stderr and "note:" not in r.stderr
    untouched(state_dir, lane5, before, out / "sweep.json")
    assert json.loads(before)["kind"] == "sweep"

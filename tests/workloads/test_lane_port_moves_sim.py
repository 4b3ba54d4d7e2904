"""A lane whose port is taken between planning and its server's bind moves to the next free port
and starts once more there: real simulator servers, real sockets taking the port at the two
moments it can happen (before the launch: someone listens; after it: a client connection's local
port, as the kernel hands out in the ephemeral range). Any other failed start is not retried."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
from pathlib import Path

import pytest

from backends.knobs.config import ServerConfig
from backends.launch.process import group_members, port_owner
from tests.helpers import free_port, free_port_run
from workloads.sweep import events as se
from workloads.bench.plan import BenchPlan
from workloads.sweep.lanes import LaneSweep, plan_lanes
from workloads.sweep.plan import SweepConfig, SweepPlan, SweepStore

B8 = SweepConfig("b8-t4-w2048", {"budget": 8, "topk": 4, "window": 2048})
B4 = SweepConfig("b4-t4-w2048", {"budget": 4, "topk": 4, "window": 2048})
SMALL = BenchPlan((60,), (1,), 16, False, 2, 0)
LAUNCHED = re.compile(r"launched pid (\d+)")


@pytest.fixture
def launched(state_dir):
    """Every server pid a test's lanes launched (from the lanes' "launched pid" notes); the test
    fails if one is still running at its end (it is killed first)."""
    pids: list[int] = []
    yield pids
    left = [pid for pid in pids if group_members(pid)]
    for pid in left:
        os.killpg(pid, signal.SIGKILL)
    assert not left, f"lane servers left running: {left}"


def config(*extra: str) -> ServerConfig:
    return ServerConfig(port=free_port_run(4), extra_args=("--sim-load-seconds", "0.3", "--sim-step-ms", "0", *extra),
                        ready_timeout_s=60, stop_timeout_s=10)


def recorder(events: list, launched: list[int], on_launch=None):
    def on_event(event) -> None:
        events.append(event)
        if isinstance(event, se.LaneEvent) and isinstance(event.event, se.ServerPhaseChanged):
            found = LAUNCHED.search(event.event.detail) if event.event.phase == "note" else None
            if found:
                launched.append(int(found.group(1)))
                if on_launch is not None:
                    on_launch(event.lane)
    return on_event


def launches(events: list, lane: int) -> int:
    return sum(1 for e in events if isinstance(e, se.LaneEvent) and e.lane == lane
               and isinstance(e.event, se.ServerPhaseChanged) and LAUNCHED.search(e.event.detail))


def lane_doc(state: Path, index: int) -> dict:
    return json.loads((state / "lanes" / str(index) / "lane.json").read_text())


def check_moved(tmp_path: Path, state: Path, events: list, records, base: int) -> se.LaneMoved:
    """Lane 0 left ``base`` for base + 2 (base + 1 is lane 1's); every run succeeded; the slot
    records, lane.json and sweep.json name the new port. Returns the LaneMoved event."""
    moved = [e for e in events if isinstance(e, se.LaneMoved)]
    assert len(moved) == 1 and (moved[0].lane, moved[0].old_port, moved[0].new_port) == (0, base, base + 2), moved
    assert [r.status for r in records] == ["done", "done"], [(r.status, r.reason) for r in records]
    ports = {r.server["lane"]: r.server["port"] for r in records}
    assert ports == {0: base + 2, 1: base + 1}
    on_lane0 = next(r for r in records if r.server["lane"] == 0)
    assert on_lane0.server["port_moved"]["from"] == base and on_lane0.server["port_moved"]["to"] == base + 2
    run = json.loads((Path(on_lane0.bench_dir) / "run.json").read_text())
    assert run["server"]["url"].endswith(f":{base + 2}")  # the run measured the server on the new port
    doc = lane_doc(state, 0)
    assert doc["port"] == base + 2 and doc["sweep"] == str(tmp_path / "sweep")
    assert [(m["from"], m["to"]) for m in doc["port_moves"]] == [(base, base + 2)]
    assert lane_doc(state, 1)["port"] == base + 1 and "port_moves" not in lane_doc(state, 1)
    manifest = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [lane["port"] for lane in manifest["lanes"]] == [base + 2, base + 1]
    return moved[0]


async def test_a_port_someone_listens_on_after_planning_moves_the_lane(tmp_path, state_dir, launched):
    base = config()
    lanes, _ = await plan_lanes(base, 2, ("0", "1"))
    assert [lane.port for lane in lanes] == [base.port, base.port + 1]
    plan = SweepPlan((B8, B4), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    events: list = []
    with socket.socket() as squatter:  # planned free, taken before the lane starts
        squatter.bind(("127.0.0.1", base.port))
        squatter.listen()
        records = await LaneSweep(plan, store, lanes, base, on_event=recorder(events, launched)).run()
    moved = check_moved(tmp_path, state_dir, events, records, base.port)
    assert f"port {base.port} is in use by pid {os.getpid()}" in moved.why
    assert launches(events, 0) == 1  # refused before a launch, then started once on the new port
    assert (state_dir / "lanes" / "0" / "server.json").exists() is False  # stopped at the end


async def test_a_client_connection_taking_the_port_during_the_load_moves_the_lane(tmp_path, state_dir, launched):
    """The ephemeral-range case: nothing listens on the port, a connection's local port holds it,
    and only the server's log ("address already in use") says why its start failed."""
    base = config()
    lanes, _ = await plan_lanes(base, 2, ("0", "1"))
    plan = SweepPlan((B8, B4), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    events: list = []
    with socket.socket() as peer, socket.socket() as client:
        peer.bind(("127.0.0.1", free_port()))
        peer.listen()

        def take_port(lane: int) -> None:
            if lane == 0 and client.getsockname()[1] == 0:  # lane 0's first launch, still loading
                client.bind(("127.0.0.1", base.port))
                client.connect(peer.getsockname())
                assert port_owner(base.port) is None  # a connection's port: nobody listens on it

        records = await LaneSweep(plan, store, lanes, base, on_event=recorder(events, launched, take_port)).run()
    moved = check_moved(tmp_path, state_dir, events, records, base.port)
    assert "address already in use" in moved.why and str(base.port) in moved.why
    assert launches(events, 0) == 2  # the one that could not bind, and the one on the new port


async def test_a_start_that_fails_for_another_reason_is_not_retried(tmp_path, state_dir, launched):
    base = config("--sim-fail-at", "load")
    lanes, _ = await plan_lanes(base, 1, ("0",))
    plan = SweepPlan((B8,), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    events: list = []
    records = await LaneSweep(plan, store, lanes, base, on_event=recorder(events, launched)).run()
    assert [r.status for r in records] == ["failed"]
    assert "address already in use" not in (records[0].reason or "") and records[0].server["port"] == base.port
    assert "port_moved" not in records[0].server
    assert not any(isinstance(e, se.LaneMoved) for e in events)
    assert launches(events, 0) == 1  # one start, not retried
    assert lane_doc(state_dir, 0)["port"] == base.port and "port_moves" not in lane_doc(state_dir, 0)


async def test_two_lanes_whose_ports_are_both_taken_move_to_different_ports(tmp_path, state_dir, launched):
    base = config()
    lanes, _ = await plan_lanes(base, 2, ("0", "1"))
    plan = SweepPlan((B8, B4), SMALL)
    store = SweepStore.create(plan, {}, tmp_path / "sweep")
    events: list = []
    with socket.socket() as one, socket.socket() as two:
        for squatter, lane in ((one, lanes[0]), (two, lanes[1])):
            squatter.bind(("127.0.0.1", lane.port))
            squatter.listen()
        records = await LaneSweep(plan, store, lanes, base, on_event=recorder(events, launched)).run()
    assert [r.status for r in records] == ["done", "done"], [(r.status, r.reason) for r in records]
    moved = {e.lane: (e.old_port, e.new_port) for e in events if isinstance(e, se.LaneMoved)}
    assert {lane: old for lane, (old, _) in moved.items()} == {0: base.port, 1: base.port + 1}
    # one move at a time: whichever lane moved first took base + 2, the other the next free port
    assert sorted(new for _, new in moved.values()) == [base.port + 2, base.port + 3]
    assert {r.server["lane"]: r.server["port"] for r in records} == {lane: new for lane, (_, new) in moved.items()}

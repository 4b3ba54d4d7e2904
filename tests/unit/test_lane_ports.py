"""Lane ports after planning (backends/record/laneports.py): the note for ports in the kernel's ephemeral
range, which failed start counts as the lane's port being taken, and the port a lane moves to."""

from __future__ import annotations

import socket

from backends.record.laneports import (EPHEMERAL_FILE, bind_clash, can_bind, ephemeral_note, ephemeral_range,
                                       next_free_port)
from backends.logs.events import Fatal
from tests.helpers import free_port, free_port_run
from workloads.sweep.lanes import plan_lanes

UVICORN = "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', {}): address already in use"


def test_ports_in_the_ephemeral_range_get_a_note_naming_them_the_range_and_the_fix():
    note = ephemeral_note([40000, 40001, 32767], (32768, 60999))
    assert note is not None
    assert note.startswith("lane port(s) 40000, 40001 lie")  # 32767 lies below the range
    assert "ephemeral port range 32768-60999" in note and str(EPHEMERAL_FILE) in note
    assert "use a base port below 32768, e.g. port = 30000" in note
    assert ephemeral_note([30000, 30001], (32768, 60999)) is None
    assert ephemeral_note([40000], None) is None  # the range cannot be read: nothing to say
    # a range reaching below 30000: the example stays below it too
    assert "use a base port below 20000, e.g. port = 19000" in (ephemeral_note([25000], (20000, 60999)) or "")


def test_the_ephemeral_range_is_read_from_the_kernel_file(tmp_path):
    good = tmp_path / "range"
    good.write_text("32768\t60999\n")
    assert ephemeral_range(good) == (32768, 60999)
    for bad in ("", "x y", "5 4"):
        good.write_text(bad)
        assert ephemeral_range(good) is None
    assert ephemeral_range(tmp_path / "missing") is None


def test_a_bind_error_is_the_lanes_clash_only_when_it_names_the_lanes_port_or_none():
    fatal = Fatal("port_in_use", UVICORN.format(30001))
    assert bind_clash([fatal], 30001) == UVICORN.format(30001).removeprefix("ERROR:").strip()
    assert bind_clash([fatal], 30000) is None  # another port (an internal one of the server's)
    bare = Fatal("port_in_use", "OSError: [Errno 98] Address already in use")
    assert bind_clash([bare], 30000) == bare.message
    assert bind_clash([Fatal("port_in_use", "bind failed on 127.0.0.1:30005: address already in use")], 30005)
    assert bind_clash([Fatal("oom", "torch.OutOfMemoryError: CUDA out of memory")], 30000) is None
    assert bind_clash([], 30000) is None


def test_the_next_free_port_skips_other_lanes_listeners_and_unbindable_ports():
    owners = {101: 4242}
    assert next_free_port(100, {102}, owners.get, lambda p: p != 103) == 104
    assert next_free_port(100, set(), lambda p: 1, lambda p: True) is None  # all taken: none
    assert next_free_port(65534, set(), lambda p: None, lambda p: False) is None  # never past 65535


def test_can_bind_is_false_for_a_listener_and_for_a_connections_local_port():
    with socket.socket() as listener, socket.socket() as client:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert not can_bind(listener.getsockname()[1])
        port = free_port()
        assert can_bind(port)
        client.bind(("127.0.0.1", port))
        client.connect(listener.getsockname())
        assert not can_bind(port)  # nothing listens there, and still a server could not bind it


async def test_planning_lanes_notes_ports_in_the_ephemeral_range(state_dir):
    from backends.knobs.config import ServerConfig

    span = ephemeral_range()
    assert span is not None, "this test reads the kernel's ephemeral range"
    inside = next(p for p in range(span[0] + 500, span[1]) if can_bind(p) and can_bind(p + 1))
    _, notes = await plan_lanes(ServerConfig(port=inside), 2, ("0", "1"))
    said = [n for n in notes if "ephemeral" in n]
    assert len(said) == 1 and f"lane port(s) {inside}, {inside + 1} lie" in said[0], notes
    assert f"use a base port below {span[0]}, e.g. port =" in said[0]
    _, notes = await plan_lanes(ServerConfig(port=free_port_run(2)), 2, ("0", "1"))
    assert not [n for n in notes if "ephemeral" in n], notes


def test_sweep_and_search_output_say_where_a_lane_moved():
    import io

    from tui.commands._sweep_print import LinePrinter
    from workloads.search.events import RoundProgress
    from workloads.search.view import SearchView
    from workloads.sweep.events import LaneMoved
    from workloads.sweep.view import SweepView

    event = LaneMoved(0, 33001, 33003, "address already in use")
    sweep, search = io.StringIO(), io.StringIO()
    LinePrinter(SweepView(), sweep)(event)
    LinePrinter(SearchView(), search)(RoundProgress(None, event))
    line = ("lane 0: port 33001 was taken before its server could bind it (address already in use); "
            "the lane moved to port 33003 and starts again there\n")
    assert sweep.getvalue() == "sweep: " + line and search.getvalue() == "search: " + line

"""Issue 32: the GPU detail (g, or a click on the GPU panel) lists every GPU process as nvitop does:
pid, user, GPU memory, utilisation and command, the console's server and a lane server marked;
j/k move in it as in every list. NVML is the fake of tests/fake_nvml.py."""

from __future__ import annotations

import sys
from dataclasses import replace

from backends.machine.gpu import GpuSampler
from backends.machine.host import HostSnapshot
from backends.server.lane_gpu import LaneShare
from backends.server.telemetry import TelemetrySample
from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml
from tests.tui.fixtures import READY, feed
from tui import messages as m
from tui.adapters import gpu_view
from tui.app import DdtuneApp
from tui.screens.gpu_detail import GpuDetail

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def sample_of(spawn):
    """Three real processes on two fake GPUs: the console's server, a lane server, someone else's."""
    server, lane, other = spawn(SLEEPER), spawn(SLEEPER), spawn(SLEEPER)
    nv = make_fake_nvml([FakeGpu(procs=[(server.pid, 40 * GIB), (other.pid, GIB)], proc_util=[(server.pid, 71)]),
                         FakeGpu(procs=[(lane.pid, 30 * GIB)], proc_util=[(lane.pid, 88)])])
    gpu = GpuSampler(nvml=nv, holds_gpu=lambda pid: True).sample({server.pid})
    host = HostSnapshot(0.0, 10.0, 16, 8 * GIB, 64 * GIB)
    lanes = (LaneShare("lane 0 GPU 1", lane.pid, (lane.pid,), 30 * GIB, (1,), (lane.pid,)),)
    return TelemetrySample(gpu, host, (server.pid,), lanes), (server.pid, lane.pid, other.pid)


def test_the_view_lists_each_process_with_its_owner(spawn):
    sample, (server, lane, other) = sample_of(spawn)
    rows = gpu_view(sample).processes
    assert [(r.gpu, r.pid, r.owner, r.util) for r in rows] == [
        (0, server, "server", 71), (0, other, "", None), (1, lane, "lane 0 GPU 1", 88)]
    assert rows[0].mem_gib == 40.0 and rows[0].command == " ".join(SLEEPER) and rows[0].user not in ("", "?")


async def test_g_opens_the_process_table_j_and_k_move_and_it_follows_the_samples(spawn):
    sample, (server, lane, other) = sample_of(spawn)
    view = gpu_view(sample)
    app = DdtuneApp()
    async with app.run_test(size=(120, 40)) as pilot:
        feed(app.main, server=READY, gpu=view, points=0, requests=0)
        await pilot.pause()
        await pilot.press("g")
        assert isinstance(app.screen, GpuDetail)
        table = app.screen.query_one("#procs")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [(r[0], r[1], r[4], r[5]) for r in rows] == [
            ("0", str(server), "71%", "server"), ("0", str(other), "-", "-"), ("1", str(lane), "88%", "lane 0 GPU 1")]
        assert rows[0][3] == "40.0G" and rows[0][6] == " ".join(SLEEPER)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1  # j/k, not the knob editor
        app.main.post_message(m.GpuSampled(replace(view, processes=view.processes[:1])))
        await pilot.pause(0.2)
        assert table.row_count == 1  # the next sample, live
        await pilot.press("escape")
        assert app.screen is app.main
        await pilot.click("#gpu")  # a click on the panel opens it too
        await pilot.pause()
        assert isinstance(app.screen, GpuDetail)

"""The GPU panel holds jittery figures still (tui.adapters.SteadyFigures): an idle machine's samples
give the same view, so the panel sends and draws nothing; a real change shows at the next sample."""

from __future__ import annotations

from backends.machine.gpu import GpuDevice, GpuSnapshot
from backends.machine.host import HostSnapshot
from backends.server.telemetry import TelemetrySample
from tui.adapters import SteadyFigures, gpu_view

GIB = 2**30


def sample(power: float, temp: int, cpu: float, ram_gib: float, util: int = 0,
           tree_cpu: float = 0.0) -> TelemetrySample:
    device = GpuDevice(0, "NVIDIA H200", None, 131 * GIB, 141 * GIB, util, 0, power, 700.0, temp, 1980)
    host = HostSnapshot(0.0, cpu, 16, int(ram_gib * GIB), 128 * GIB, (4242,), tree_cpu, 3 * GIB)
    return TelemetrySample(GpuSnapshot(True, devices=(device,)), host, (4242,))


def test_jitter_gives_the_same_view_and_a_real_change_shows_at_once():
    steady = SteadyFigures()
    idle = gpu_view(sample(75.0, 35, 1.0, 10.0, tree_cpu=2.0), steady=steady)
    assert gpu_view(sample(78.4, 36, 4.0, 10.3, tree_cpu=5.9), steady=steady) == idle
    assert gpu_view(sample(72.1, 34, 0.0, 9.8, tree_cpu=0.0), steady=steady) == idle
    busy = gpu_view(sample(310.0, 36, 40.0, 12.0, util=87, tree_cpu=180.0), steady=steady)
    row = busy.rows[0]
    assert (row.power_w, row.util, row.temp_c) == (310.0, 87, 35)  # a degree is within the flicker
    assert busy.host == "host: cpu 40% of 16  ram 12.0/128.0 GiB  server tree: cpu 180%  rss 3.0 GiB"
    # under load 3 % of the draw is the tolerance; held values follow a drift once it adds up
    assert gpu_view(sample(316.0, 37, 42.0, 12.0, util=88), steady=steady).rows[0].power_w == 310.0
    assert gpu_view(sample(320.0, 37, 42.0, 12.0, util=88), steady=steady).rows[0].power_w == 320.0
    assert gpu_view(sample(320.0, 37, 42.0, 12.0), steady=steady).rows[0].temp_c == 37


def test_without_a_steady_holder_the_view_is_as_sampled():
    view = gpu_view(sample(78.4, 36, 4.0, 10.3))
    assert (view.rows[0].power_w, view.rows[0].temp_c) == (78.4, 36)
    assert view.host is not None and view.host.startswith("host: cpu 4% of 16  ram 10.3/128.0 GiB")


def test_an_idle_gpus_history_is_empty_until_it_works():
    from backends.server.telemetry import History

    history = History()
    for util in (0, 0, 0, 37, 0):
        history.add(sample(75.0, 35, 1.0, 10.0, util=util))
        view = gpu_view(sample(75.0, 35, 1.0, 10.0, util=util), history.util_gpu)
    assert view.rows[0].util_history == (37, 0)  # leading zeros draw as blank padding: left out

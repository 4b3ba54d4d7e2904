"""Turn engine objects (telemetry samples, lifecycle status) into the console's view models. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from backends.server import TelemetrySample
from tui.views import GpuProcRow, GpuRow, GpuView

GIB = float(2**30)


class SteadyFigures:
    """The GPU panel's jittery figures held still until they really move.

    Sampled once a second, an idle machine's power draw wanders a few watts, its host CPU a few
    per cent and a temperature flickers across a degree: numbers nobody acts on, and each change
    redraws its row on the terminal. A figure shown keeps its value until a sample differs from it
    by at least its tolerance (power: 5 W or 3 %; CPU: 5 points; temperature: 2 degrees; memory:
    0.5 GiB); any real change (a load starting, a model loading) moves it at once. Utilisation and
    GPU memory are always shown as sampled. One per panel: it remembers what that panel shows."""

    def __init__(self) -> None:
        self._shown: dict[str, float] = {}

    def hold(self, key: str, value: float, tolerance: float) -> float:
        shown = self._shown.get(key)
        if shown is None or abs(value - shown) >= tolerance:
            self._shown[key] = shown = value
        return shown

    def power(self, index: int, watts: float | None) -> float | None:
        return None if watts is None else self.hold(f"power {index}", watts, max(5.0, 0.03 * watts))

    def temperature(self, index: int, celsius: int | None) -> int | None:
        return None if celsius is None else int(self.hold(f"temp {index}", celsius, 2))


def _same(key: str, value: float, tolerance: float) -> float:
    return value


def gpu_view(sample: TelemetrySample, util_history: Mapping[int, Iterable[float]] | None = None,
             steady: SteadyFigures | None = None) -> GpuView:
    """The GPU panel's view of one sample; ``util_history``: each GPU's utilisation samples so far (the
    stream's history); ``steady`` holds the jittery figures still (SteadyFigures)."""
    host = sample.host
    hold = steady.hold if steady is not None else _same
    cpu = hold("host cpu", host.cpu_percent, 5.0)
    ram = hold("host ram", host.ram_used / GIB, 0.5)
    host_line = f"host: cpu {cpu:.0f}% of {host.cpu_count}  ram {ram:.1f}/{host.ram_total / GIB:.1f} GiB"
    if sample.server_pids:
        tree_cpu = hold("tree cpu", host.tree_cpu_percent or 0.0, 5.0)
        tree_rss = hold("tree rss", (host.tree_rss or 0) / GIB, 0.5)
        host_line += f"  server tree: cpu {tree_cpu:.0f}%  rss {tree_rss:.1f} GiB"
    gpu = sample.gpu
    if not gpu.available:
        return GpuView(available=False, reason=gpu.reason, host=host_line)
    per_device: dict[int, float] = {}
    for proc in gpu.processes:
        if proc.is_server and proc.used_bytes:
            per_device[proc.device_index] = per_device.get(proc.device_index, 0.0) + proc.used_bytes
    rows = []
    for dev in gpu.devices:
        hist = tuple(int(v) for v in util_history.get(dev.index, ())) if util_history else ()
        hist = hist[-40:]
        while hist and hist[0] == 0:  # leading zeros draw as the sparkline's blank padding: an idle GPU's
            hist = hist[1:]           # history stays () and its view does not change every second
        rows.append(
            GpuRow(
                index=dev.index,
                name=dev.name,
                used_gib=(dev.memory_used or 0) / GIB,
                total_gib=(dev.memory_total or 0) / GIB,
                server_gib=per_device.get(dev.index, 0.0) / GIB,
                util=dev.util_gpu,
                power_w=steady.power(dev.index, dev.power_w) if steady is not None else dev.power_w,
                power_limit_w=dev.power_limit_w,
                temp_c=steady.temperature(dev.index, dev.temperature_c) if steady is not None else dev.temperature_c,
                util_history=hist,
                lane_gib=sum(share.on_device(gpu, dev.index) for share in sample.lanes) / GIB,
            )
        )
    summary = gpu.server_share.summary() if gpu.server_share else None
    if gpu.host_pids and gpu.warnings:
        summary = gpu.warnings[0]
    lanes = tuple(f"{share.label} server pid {share.pid}: {share.used_bytes / GIB:.1f}G on GPU "
                  f"{','.join(map(str, share.device_indices)) or 'none'}" for share in sample.lanes)
    return GpuView(available=True, rows=tuple(rows), server_summary=summary, host=host_line, lanes=lanes,
                   processes=process_rows(sample))


def process_rows(sample: TelemetrySample) -> tuple[GpuProcRow, ...]:
    """Every GPU process of the sample, by GPU, then most memory first: the server's and each lane
    server's marked by owner."""
    lanes = {pid: share.label for share in sample.lanes for pid in share.tree_pids}
    rows = [GpuProcRow(gpu=p.device_index, pid=p.pid, user=p.user or "?",
                       mem_gib=None if p.used_bytes is None else p.used_bytes / GIB, util=p.sm_util,
                       command=p.command or p.name or ("(not visible here)" if not p.visible else "?"),
                       owner="server" if p.is_server else lanes.get(p.pid, "") if p.visible else "")
            for p in sample.gpu.processes]
    return tuple(sorted(rows, key=lambda r: (r.gpu, -(r.mem_gib or 0.0), r.pid)))


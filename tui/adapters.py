"""Turn engine objects (telemetry samples, lifecycle status) into the console's view models. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from backends.knobs import KnobCheck, KnobValue, knob_text
from backends.server import History, TelemetrySample
from tui.views import GpuRow, GpuView, KnobRow

GIB = float(2**30)


def gpu_view(sample: TelemetrySample, history: History | None = None) -> GpuView:
    host = sample.host
    host_line = (f"host: cpu {host.cpu_percent:.0f}% of {host.cpu_count}  "
                 f"ram {host.ram_used / GIB:.1f}/{host.ram_total / GIB:.1f} GiB")
    if sample.server_pids:
        host_line += f"  server tree: cpu {host.tree_cpu_percent or 0:.0f}%  rss {(host.tree_rss or 0) / GIB:.1f} GiB"
    gpu = sample.gpu
    if not gpu.available:
        return GpuView(available=False, reason=gpu.reason, host=host_line)
    per_device: dict[int, float] = {}
    for proc in gpu.processes:
        if proc.is_server and proc.used_bytes:
            per_device[proc.device_index] = per_device.get(proc.device_index, 0.0) + proc.used_bytes
    rows = []
    for dev in gpu.devices:
        hist = tuple(int(v) for v in history.util_gpu.get(dev.index, ())) if history else ()
        rows.append(
            GpuRow(
                index=dev.index,
                name=dev.name,
                used_gib=(dev.memory_used or 0) / GIB,
                total_gib=(dev.memory_total or 0) / GIB,
                server_gib=per_device.get(dev.index, 0.0) / GIB,
                util=dev.util_gpu,
                power_w=dev.power_w,
                power_limit_w=dev.power_limit_w,
                temp_c=dev.temperature_c,
                util_history=hist[-40:],
                lane_gib=sum(share.on_device(gpu, dev.index) for share in sample.lanes) / GIB,
            )
        )
    summary = gpu.server_share.summary() if gpu.server_share else None
    if gpu.host_pids and gpu.warnings:
        summary = gpu.warnings[0]
    lanes = tuple(f"{share.label} server pid {share.pid}: {share.used_bytes / GIB:.1f}G on GPU "
                  f"{','.join(map(str, share.device_indices)) or 'none'}" for share in sample.lanes)
    return GpuView(available=True, rows=tuple(rows), server_summary=summary, host=host_line, lanes=lanes)


_VERIFIED = {"verified": True, "mismatch": False, "default": True}  # default: nothing asked, nothing to miss


def knob_rows(knobs: Mapping[str, KnobValue], checks: Iterable[KnobCheck]) -> tuple[KnobRow, ...]:
    """Requested versus what the server says, per knob, from the typed checks: verified, mismatch,
    or unknown (no check, or the server did not say)."""
    by_name = {check.name: check for check in checks}
    rows = []
    for name, value in knobs.items():
        requested = knob_text(value)
        check = by_name.get(name)
        if check is None or check.status == "unverified" or (check.status == "default" and check.effective is None):
            rows.append(KnobRow(name, requested, None, None))
            continue
        shown = "None" if check.effective is None else str(check.effective)
        rows.append(KnobRow(name, requested, shown, _VERIFIED[check.status]))
    return tuple(rows)

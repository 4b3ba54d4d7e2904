"""ddtune gpu: show GPU memory, utilisation and the server's share (like nvidia-smi)"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict

HELP = "show GPU memory, utilisation and the server's share (like nvidia-smi)"
EXAMPLES = """\
examples:
  ddtune gpu                      refresh every second until Ctrl-C
  ddtune gpu --once               one reading, then exit
  ddtune gpu --once --json        one JSON document ({"available": false, "reason": ...} without a driver)
  ddtune gpu --pid 12345          attribute memory to the process tree of pid 12345
  ddtune gpu --interval 0.5       refresh twice a second

The server's share counts every process in its process group, its session and its descendants
(target, draft, every rank). Without --pid, the managed server is read from the state dir's server.json,
and each server of a parallel sweep's lanes (lanes/N/server.json) gets its own line and tag.
"""

GIB = 2**30
BAR = 20


def add_arguments(parser) -> None:
    parser.add_argument("--once", action="store_true", help="print one reading and exit")
    parser.add_argument("--json", action="store_true",
                        help="JSON output: one document (with --once) or one document per line")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S",
                        help="seconds between readings (default 1.0)")
    parser.add_argument("--pid", type=int, default=None,
                        help="the server's root pid (default: pid from the state dir's server.json)")


def _gib(value: int | None) -> str:
    return "   n/a" if value is None else f"{value / GIB:6.1f}"


def _num(value, fmt: str, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def _bar(used: int | None, total: int | None) -> str:
    if not used or not total:
        return "[" + " " * BAR + "]"
    filled = min(BAR, round(BAR * used / total))
    return "[" + "#" * filled + "." * (BAR - filled) + "]"


def render_text(sample) -> str:
    """The nvidia-smi-like text view of one TelemetrySample (with its lane servers' shares)."""
    gpu, host = sample.gpu, sample.host
    lines: list[str] = []
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(gpu.timestamp or host.timestamp))
    if not gpu.available:
        if gpu.plainly_unavailable:
            lines.append(f"{gpu.reason}: {gpu.hint}")
        else:
            lines.append(f"GPU telemetry unavailable: {gpu.reason}")
            if gpu.hint:
                lines.append(f"hint: {gpu.hint}")
    else:
        lines.append(f"ddtune gpu  {stamp}  driver {gpu.driver_version or 'n/a'}  {len(gpu.devices)} GPU(s)")
        lines.append(f"{'GPU':>3}  {'name':<22} {'memory used / total GiB':<38} {'util':>5} {'mem%':>5} "
                     f"{'power / limit W':>15} {'temp':>5} {'SM MHz':>6}")
        for d in gpu.devices:
            mem = f"{_gib(d.memory_used)} / {_gib(d.memory_total)} {_bar(d.memory_used, d.memory_total)}"
            power = f"{_num(d.power_w, '.0f')} / {_num(d.power_limit_w, '.0f')}"
            lines.append(f"{d.index:>3}  {d.name[:22]:<22} {mem:<38} {_num(d.util_gpu, 'd', '%'):>5} "
                         f"{_num(d.util_memory, 'd', '%'):>5} {power:>15} {_num(d.temperature_c, 'd', 'C'):>5} "
                         f"{_num(d.sm_clock_mhz, 'd'):>6}")
        lines.append("")
        if gpu.processes:
            lines.append(f"{'pid':>8} {'GPU':>3} {'type':>4} {'memory GiB':>10}  name")
            owner = {pid: f"  [{lane.label} server pid {lane.pid}]" for lane in sample.lanes for pid in lane.tree_pids}
            for p in gpu.processes:
                tag = "  [server]" if p.is_server else owner.get(p.pid, "") if p.visible else ""
                name = p.name or "(not visible here)"
                lines.append(f"{p.pid:>8} {p.device_index:>3} {p.kind:>4} {_gib(p.used_bytes):>10}  {name}{tag}")
        else:
            lines.append("no processes hold GPU memory (as far as NVML reports)")
        if gpu.server_share is not None:
            lines.append(gpu.server_share.summary())
        elif sample.server_pids:
            lines.append("server: GPU memory not attributable (see warnings)")
        elif not sample.lanes:
            lines.append("server: none (no server.json in the state dir; use --pid PID)")
        for share in sample.lanes:
            gpus = ", ".join(map(str, share.device_indices)) or "none"
            lines.append(f"{share.label} server pid {share.pid}: {share.used_bytes / GIB:.1f} GiB on GPU "
                         f"{gpus} (pids {', '.join(map(str, share.pids)) or 'none'})")
        for warning in gpu.warnings:
            lines.append(f"warning: {warning}")
        if gpu.hint:
            lines.append(f"hint: {gpu.hint}")
    lines.append(f"host: CPU {host.cpu_percent:.0f}% of {host.cpu_count} cores, "
                 f"RAM {host.ram_used / GIB:.1f} / {host.ram_total / GIB:.1f} GiB")
    if sample.server_pids:
        lines.append(f"server tree: {len(host.tree_pids)} processes, CPU {host.tree_cpu_percent:.0f}%, "
                     f"RSS {host.tree_rss / GIB:.2f} GiB")
    return "\n".join(lines)


def to_json(sample) -> dict:
    gpu = asdict(sample.gpu)
    host = asdict(sample.host)
    if not sample.gpu.available:
        return {"available": False, "reason": gpu["reason"], "hint": gpu["hint"], "host": host}
    gpu["memory_used"] = sample.gpu.memory_used
    gpu["memory_total"] = sample.gpu.memory_total
    gpu["server_pids"] = list(sample.server_pids)
    gpu["lane_servers"] = [share.to_json() for share in sample.lanes]
    gpu["host"] = host
    return gpu


def run(args) -> int:
    from contextlib import closing

    from backends.server import gpu_samples

    out = sys.stdout
    with closing(gpu_samples(args.pid, args.interval, args.once)) as samples:
        try:
            for sample in samples:
                if args.json:
                    out.write(json.dumps(to_json(sample)) + "\n")
                elif args.once:
                    out.write(render_text(sample) + "\n")
                else:
                    out.write("\x1b[H\x1b[2J" + render_text(sample) + "\n")
                out.flush()
        except KeyboardInterrupt:
            return 0
    return 0

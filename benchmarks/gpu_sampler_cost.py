"""CPU cost of GPU/host telemetry: how much of one core sampling costs at a given interval.

    python benchmarks/gpu_sampler_cost.py                       # fake NVML with 8 devices (no driver needed)
    python benchmarks/gpu_sampler_cost.py --real --duration 20  # the real driver, all its devices

Prints (1) the CPU time per sample measured back to back, (2) a paced run at --interval for --duration
seconds, CPU time over wall time as % of one core, (3) the same with the host sampler and the server
tree walk that the console also does each interval. Figures only: nothing here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from backends.machine.gpu import GpuSampler  # noqa: E402
from backends.machine.host import HostSampler, server_tree_pids  # noqa: E402


def make_sampler(real: bool, devices: int, pids: list[int]) -> GpuSampler:
    if real:
        return GpuSampler()
    from tests.fake_nvml import GIB, FakeGpu, make_fake_nvml

    gpus = [FakeGpu(used=(20 + i) * GIB, procs=[(pid, 9 * GIB) for pid in pids]) for i in range(devices)]
    return GpuSampler(nvml=make_fake_nvml(gpus), holds_gpu=lambda pid: True)


def cpu_per_sample(fn, n: int) -> float:
    fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def paced(fn, interval: float, duration: float) -> float:
    """% of one core spent while calling fn every interval for duration seconds."""
    cpu0, wall0 = time.process_time(), time.monotonic()
    next_at = wall0
    while time.monotonic() - wall0 < duration:
        fn()
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    return 100.0 * (time.process_time() - cpu0) / (time.monotonic() - wall0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", action="store_true", help="use the real NVML instead of a fake")
    ap.add_argument("--devices", type=int, default=8, help="fake devices (default 8)")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=200, help="back-to-back samples for the per-sample figure")
    args = ap.parse_args()

    # A small real process tree stands in for the server: a session leader with two children.
    server = subprocess.Popen([sys.executable, "-c",
                               "import subprocess,sys,time; c=[subprocess.Popen([sys.executable,'-c',"
                               "'import time; time.sleep(600)']) for _ in range(2)]; time.sleep(600)"],
                              start_new_session=True)
    try:
        time.sleep(1.0)
        tree = sorted(server_tree_pids(server.pid, server.pid))
        sampler = make_sampler(args.real, args.devices, tree)
        first = sampler.sample(tree)
        if not first.available:
            print(f"GPU telemetry unavailable: {first.reason}")
            return 1
        ndev = len(first.devices)
        host = HostSampler()
        label = "real NVML" if args.real else "fake NVML"
        per = cpu_per_sample(lambda: sampler.sample(tree), args.repeat)
        print(f"{label}, {ndev} devices, {len(first.processes)} GPU processes")
        print(f"gpu sample, back to back: {per * 1e6:.0f} us CPU per sample "
              f"= {100 * per / args.interval:.3f}% of one core at one sample per {args.interval:g} s")
        tree_cost = cpu_per_sample(lambda: server_tree_pids(server.pid, server.pid), 50)
        host_cost = cpu_per_sample(lambda: host.sample(tree), args.repeat)
        print(f"server tree walk: {tree_cost * 1e6:.0f} us CPU per walk ({len(os.listdir('/proc'))} /proc entries); "
              f"host sample: {host_cost * 1e6:.0f} us CPU")
        pct = paced(lambda: sampler.sample(tree), args.interval, args.duration)
        print(f"gpu sampler paced at {args.interval:g} s for {args.duration:g} s: {pct:.3f}% of one core")
        pct_all = paced(lambda: (sampler.sample(tree), host.sample(tree)), args.interval, args.duration)
        print(f"gpu + host samplers paced: {pct_all:.3f}% of one core "
              f"(+ tree walk every 5 s: {100 * tree_cost / 5:.3f}%)")
        sampler.close()
    finally:
        os.killpg(server.pid, 9)
        server.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

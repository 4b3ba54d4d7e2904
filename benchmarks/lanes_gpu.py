"""A parallel sweep on real GPUs: each lane's server memory lands on its own GPU, `ddtune gpu` names
each lane's server, and nothing is left on any GPU afterwards.

The servers are the simulator holding real device memory (``--sim-gpu-alloc-gib``, CUDA driver
API), so the box needs an NVIDIA driver and nvidia-ml-py, nothing else. Run it on a box with two or
more idle GPUs, from the repository root:

    python3 benchmarks/lanes_gpu.py [--gib 4] [--lanes 2]

It runs ``ddtune sweep A B --parallel N`` with the GPUs left to NVML (every idle GPU), sampling
NVML's process lists while the sweep runs; then the same with ``--keep-server``, reads ``ddtune gpu``
and the console's GPU panel (the real app, driven headless beside the kept lanes, its screenshot
saved as console-lanes.svg in $OUT or the work folder), runs ``ddtune down``; and checks each GPU's
process list is empty at the end. Prints every command, what NVML saw, and PASS/FAIL lines; exit 1
on any FAIL.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GIB = 2**30
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)
    if not ok:
        failures.append(what)


def ddtune(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tui.cli", *args]
    print(f"$ ddtune {' '.join(args)}", flush=True)
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    print(done.stderr.rstrip(), flush=True)
    if done.stdout.strip():
        print(done.stdout.rstrip()[-4000:], flush=True)
    print(f"(exit {done.returncode}, {time.monotonic() - t0:.1f} s)", flush=True)
    return done


def gpu_procs() -> dict[int, dict[int, int]]:
    """NVML's compute processes: GPU index -> {pid: bytes}."""
    import pynvml

    pynvml.nvmlInit()
    try:
        out = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            out[i] = {p.pid: int(p.usedGpuMemory or 0) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
        return out
    finally:
        pynvml.nvmlShutdown()


def lane_servers(state: Path) -> dict[int, dict]:
    """The lane servers ddtune recorded under ``state``, read through the server's face (the record's
    codec), as any part of ddtune reads them."""
    os.environ["DDTUNE_STATE_DIR"] = str(state)
    from backends.server import lane_servers as recorded

    return {s.index: {"pid": s.state.pid, "phase": s.state.phase, "gpus": list(s.gpus)} for s in recorded()}


class Watch(threading.Thread):
    """While the sweep runs: every lane server pid NVML lists, and on which GPU."""

    def __init__(self, state: Path) -> None:
        super().__init__(daemon=True)
        self.state, self.stop = state, threading.Event()
        self.seen: dict[tuple[int, int, int], tuple[tuple[str, ...], int]] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            servers = lane_servers(self.state)
            procs = gpu_procs()
            for lane, server in servers.items():
                for gpu, pids in procs.items():
                    if server["pid"] in pids:
                        self.seen[(lane, server["pid"], gpu)] = (tuple(server["gpus"] or ()), pids[server["pid"]])
            time.sleep(0.3)


CONSOLE = """
import asyncio, json, sys
from backends.knobs.config import load_config
from tui.app import DdtuneApp
from tui.controller import ConsoleController

async def main():
    app = DdtuneApp(ConsoleController(load_config(sys.argv[1]), simulated=True))
    async with app.run_test(size=(160, 50)) as pilot:
        view = None
        for _ in range(150):   # the console's own server starts; lane trees are re-read every 5 s
            await pilot.pause(0.2)
            view = app.main.gpu.view
            if view.available and len(view.lanes) == int(sys.argv[2]) and any(r.server_gib for r in view.rows):
                break
        await pilot.pause(1.0)
        app.save_screenshot(sys.argv[3])
        print(json.dumps({"lanes": list(view.lanes), "server": view.server_summary,
                          "rows": [[r.index, round(r.used_gib, 2), round(r.server_gib, 2), round(r.lane_gib, 2)]
                                   for r in view.rows]}))
        await app.controller.detach(stop_server=True)

asyncio.run(main())
"""


def console_check(work: Path, env: dict[str, str], servers: dict[int, dict], gib: float) -> None:
    """The console (its own simulator on another port, holding 1 GiB) beside the kept lane servers:
    its GPU panel draws each lane server's memory on that lane's GPU and names the server's pid."""
    config = work / "console.toml"
    config.write_text('[server]\nbackend = "sim"\nport = 31950\n'
                      'extra_args = ["--sim-load-seconds", "1", "--sim-gpu-alloc-gib", "1"]\n')
    shot = Path(os.environ.get("OUT") or work) / "console-lanes.svg"
    print(f"$ (console, headless) ddtune --config {config}", flush=True)
    done = subprocess.run([sys.executable, "-c", CONSOLE, str(config), str(len(servers)), str(shot)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    print(done.stdout.strip()[-3000:] or done.stderr.strip()[-3000:], flush=True)
    try:
        view = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check(False, "the console ran and reported its GPU panel")
        return
    print(f"console screenshot: {shot}", flush=True)
    for lane, server in servers.items():
        gpu = int(server["gpus"][0])
        line = next((t for t in view["lanes"] if f"server pid {server['pid']}:" in t), "")
        row = next((r for r in view["rows"] if r[0] == gpu), [gpu, 0, 0, 0])
        check(line.startswith(f"lane {lane} GPU {gpu} ") and line.endswith(f"on GPU {gpu}") and row[3] >= gib,
              f"the console's GPU panel: {line!r}, {row[3]:.2f} GiB of lanes on GPU {gpu}")
    check(sum(r[2] for r in view["rows"]) >= 0.9 and bool(view["server"]),
          f"and its own server's 1 GiB as the server's share, not a lane's ({view['server']})")


def foreign_check(config: Path, env: dict[str, str], lanes: int) -> None:
    """A process ddtune did not start holds memory on every GPU: the default choice refuses them all,
    names its pid, and starts nothing."""
    import signal

    holders = []
    for gpu in range(len(gpu_procs())):
        holders.append(subprocess.Popen(
            [sys.executable, "-m", "backends.sim", "--model-path", "foreign", "--port", str(31990 + gpu),
             "--sim-load-seconds", "0.5", "--sim-gpu-alloc-gib", "1"], cwd=REPO, start_new_session=True,
            env={**env, "CUDA_VISIBLE_DEVICES": str(gpu), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(1 for p in gpu_procs().values() if p) < len(holders):
            time.sleep(0.3)
        print(f"foreign holders: pids {[h.pid for h in holders]}; NVML: {gpu_procs()}", flush=True)
        done = ddtune("--config", str(config), "sweep", "b8-t4-w2048", "--parallel", str(lanes), "--no-eval",
                      "--out", str(Path(env["DDTUNE_STATE_DIR"]).parent / "sweep3"), env=env)
        check(done.returncode == 2 and "every GPU holds another process's memory" in done.stderr
              and all(str(h.pid) in done.stderr for h in holders),
              "with a foreign process on every GPU the default choice refuses, naming its pids")
        check(not (Path(env["DDTUNE_STATE_DIR"]) / "lanes" / "0" / "server.json").exists(), "and starts nothing")
    finally:
        for h in holders:
            os.killpg(h.pid, signal.SIGKILL)
            h.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=4.0, help="GPU memory each server holds (default 4)")
    parser.add_argument("--lanes", type=int, default=2, help="--parallel (default 2)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ddtune-lanes-gpu-"))
    state = work / "state"
    config = work / "ddtune.toml"
    config.write_text('[server]\nbackend = "sim"\nport = 31900\n'
                      f'extra_args = ["--sim-load-seconds", "2", "--sim-step-ms", "0", "--sim-gpu-alloc-gib", '
                      f'"{args.gib:g}"]\nready_timeout_s = 120\nstop_timeout_s = 20\n')
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))  # carried wheels too
    env = {**os.environ, "DDTUNE_STATE_DIR": str(state), "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    before = gpu_procs()
    print(f"GPUs: {len(before)}; NVML compute processes before: {before}", flush=True)
    check(len(before) >= args.lanes and not any(before.values()), f"{args.lanes}+ idle GPUs to start with")
    sweep = ("sweep", "b8-t4-w2048", "b4-t4-w2048", "--parallel", str(args.lanes), "--contexts", "60",
             "--concurrency", "1", "4", "--requests-per-cell", "64", "--max-tokens", "128", "--warmup", "0",
             "--no-eval")

    watch = Watch(state)
    watch.start()
    done = ddtune("--config", str(config), *sweep, "--out", str(work / "sweep1"), env=env)
    watch.stop.set()
    watch.join()
    check(done.returncode == 0, "the parallel sweep finished")
    print(f"seen while it ran (lane, pid, NVML GPU) -> (lane GPUs, bytes): {watch.seen}", flush=True)
    lanes_seen = {lane for lane, _, _ in watch.seen}
    check(lanes_seen == set(range(args.lanes)), f"NVML listed a server of every lane ({sorted(lanes_seen)})")
    check(all(gpus == (str(gpu),) for (_, _, gpu), (gpus, _) in watch.seen.items()),
          "each lane server's memory sat on its own lane's GPU and on no other")
    check(all(b >= args.gib * GIB for _, b in watch.seen.values()), f"each held at least {args.gib:g} GiB")
    after = gpu_procs()
    check(not any(after.values()), f"nothing left on any GPU after the sweep: {after}")

    done = ddtune("--config", str(config), *sweep, "--keep-server", "--out", str(work / "sweep2"), env=env)
    check(done.returncode == 0, "the --keep-server sweep finished")
    servers = lane_servers(state)
    procs = gpu_procs()
    print(f"kept lane servers: {servers}; NVML: {procs}", flush=True)
    for lane, server in servers.items():
        gpu = int(server["gpus"][0])
        check(server["pid"] in procs.get(gpu, {}) and all(server["pid"] not in p for i, p in procs.items() if i != gpu),
              f"lane {lane} server pid {server['pid']} holds memory on GPU {gpu} only")
    view = ddtune("gpu", "--once", env=env)
    for lane, server in servers.items():
        check(f"[lane {lane} GPU {server['gpus'][0]} server pid {server['pid']}]" in view.stdout,
              f"ddtune gpu tags lane {lane}'s process with its server pid")
    doc = json.loads(ddtune("gpu", "--once", "--json", env=env).stdout)
    shares = {s["pid"]: s for s in doc.get("lane_servers", [])}
    for lane, server in servers.items():
        share = shares.get(server["pid"], {})
        check(share.get("device_indices") == [int(server["gpus"][0])] and share.get("used_bytes", 0) >= args.gib * GIB,
              f"ddtune gpu --json attributes {share.get('used_bytes', 0) / GIB:.2f} GiB on GPU "
              f"{share.get('device_indices')} to lane {lane}")
    console_check(work, env, servers, args.gib)
    down = ddtune("--config", str(config), "down", env=env)
    check(down.returncode == 0 and all(f"lane {lane}: stopped pid" in down.stderr for lane in servers),
          "ddtune down stopped every lane server")
    time.sleep(1.0)
    final = gpu_procs()
    print(f"NVML compute processes at the end: {final}", flush=True)
    check(not any(final.values()), "nothing left on either GPU")
    foreign_check(config, env, args.lanes)
    print(f"{len(failures)} failure(s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

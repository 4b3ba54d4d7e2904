"""Two lanes on one GPU, on a real SGLang (benchmarks/real_sglang.py --lanes): a parallel sweep of two
draft windows on the agreeing pair with ``--parallel 2 --gpus 0,0 --share-gpu``, then a sweep of one
lane that stops the other. Each step a PASS/FAIL line:

  the sweep passes with both runs labelled shared-GPU -> their servers started one after the other
  -> each with its own port and NCCL port -> each lane's GPU memory is its own process tree's
  (``ddtune gpu --json`` beside nvidia-smi) -> the report warns of the shared GPU -> a sweep of one
  lane stops lane 1 and keeps lane 0's server (same pid, no restart) -> nothing left.

Figures (restart seconds, tok/s, acceptance per lane) are printed; they measure lane management on a
time-sliced GPU, not speed.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from benchmarks.realtier import check, ddtune, gpu_used_mib, server_pids, write_config

BENCH = ("--no-eval", "--contexts", "60", "--concurrency", "1", "4", "--max-tokens", "128", "--requests-per-cell",
         "8", "--warmup", "0")


def lane_records() -> dict[int, dict]:
    """The live lane servers recorded under DDTUNE_STATE_DIR (ddtune's own reader of lane folders)."""
    from backends.server.lanes import lane_servers

    return {s.index: {"pid": s.state.pid, "port": s.state.port, "create_time": s.state.create_time,
                      "ready_at": s.state.ready_at} for s in lane_servers() if s.alive}


def starts_in_turn(stderr: str) -> bool:
    """In a two-lane sweep's output: the second lane's first launch comes after the first lane's ready."""
    lines = stderr.splitlines()

    def first_line(lane: int, what: str) -> int | None:
        return next((i for i, line in enumerate(lines) if re.match(rf"\[lane {lane} GPU [^]]*\]\s+{what}", line)),
                    None)

    launched = {lane: first_line(lane, "note: launched pid") for lane in (0, 1)}
    if None in launched.values():
        return False
    first, second = sorted(launched, key=lambda lane: launched[lane] or 0)
    ready = first_line(first, "ready$")
    return ready is not None and (launched[first] or 0) < ready < (launched[second] or 0)


def listening(pid: int) -> set[int]:
    """The TCP ports the process tree of ``pid`` listens on: the HTTP port, and the NCCL rendezvous
    port SGLang picks for itself (its server_args print ``'nccl_port': None``, chosen later)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return set()
    ports = set()
    for proc in procs:
        try:
            ports |= {c.laddr.port for c in proc.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            continue
    return ports


def smi_apps() -> list[tuple[int, int]]:
    done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True)
    return [(int(a), int(b)) for a, b in (line.split(",") for line in done.stdout.strip().splitlines() if "," in line)]


def shared_lanes(args, work: Path, out: Path) -> None:
    config = write_config(work / "lanes.toml", args, "agree", 512)
    presets = []
    for window in (512, 1024):
        preset = work / f"w{window}.toml"
        preset.write_text(f'description = "draft window {window}"\n[knobs]\nwindow = {window}\n')
        presets.append(str(preset))
    folder = out / "lanes_sweep"
    sweep = ddtune(config, "sweep", *presets, "--parallel", "2", "--gpus", "0,0", "--share-gpu", "--keep-server",
                   *BENCH, "--out", str(folder), "--json", timeout=480)
    (out / "lanes_sweep.err").write_text(sweep.stderr)
    check(sweep.returncode == 0 and "is shared by lanes 0, 1" in sweep.stderr,
          f"a sweep on two lanes sharing GPU 0 (exit {sweep.returncode})")
    records = [json.loads(line) for line in (folder / "slots.jsonl").read_text().splitlines()] \
        if (folder / "slots.jsonl").is_file() else []
    servers = {r["server"].get("lane"): r["server"] for r in records}
    labels = [(k, s.get("shared_gpu"), s.get("gpus")) for k, s in servers.items()]
    check(sorted(servers) == [0, 1] and all(s.get("shared_gpu") and s.get("gpus") == ["0"] for s in servers.values()),
          f"both runs labelled shared-GPU on GPU 0: {labels}")
    for r in records:
        for cell in (r.get("bench") or {}).get("cells") or []:
            acc = cell.get("acceptance") or {}
            print(f"  lane {r['server'].get('lane')} ({r['slot']['config']}): restart {r['server'].get('restart_s')} s;"
                  f" c={cell.get('concurrency')}: {cell.get('output_tok_s', 0):.0f} tok/s, acceptance "
                  f"{acc.get('total')} ({acc.get('source')})", flush=True)
    lanes = lane_records()  # the servers --keep-server left
    if len(lanes) == 2:
        check(starts_in_turn(sweep.stderr), "one start at a time: the second lane launched its server after the "
                                            "first lane's was ready (the sweep's own lines, in order)")
        ports = {i: sorted(listening(s["pid"])) for i, s in lanes.items()}
        check(all(len(p) >= 2 for p in ports.values()) and not set(ports[0]) & set(ports[1]),
              f"each lane's server listens on ports of its own (HTTP, NCCL, ...): {ports}")
        gpu = ddtune(config, "gpu", "--once", "--json", timeout=60)
        shares = json.loads(gpu.stdout).get("lane_servers", []) if gpu.returncode == 0 else []
        (out / "lanes_gpu.json").write_text(gpu.stdout)
        apps = smi_apps()
        print(f"  nvidia-smi: {apps}; ddtune gpu: "
              f"{[(s['lane'], s['pid'], s['pids'], s['used_bytes'] >> 20) for s in shares]}", flush=True)
        mine = {s["pid"]: set(s["pids"]) for s in shares}
        check(len(shares) == 2 and all(s["used_bytes"] > 0 and s["device_indices"] == [0] for s in shares)
              and not (set.intersection(*mine.values()) if mine else set())
              and sum(s["used_bytes"] for s in shares) >> 20 == sum(m for _, m in apps),
              "each lane's GPU memory is its own process tree's, and together all nvidia-smi lists")
    report = ddtune(config, "report", str(folder), timeout=60)
    check("shared GPU 0 (--share-gpu)" in report.stdout and "| GPU use |" in report.stdout,
          "the report warns that lanes 0 and 1 shared GPU 0")
    kept = lanes.get(0, {})
    one = ddtune(config, "sweep", presets[0], "--parallel", "1", "--gpus", "0", *BENCH, "--out",
                 str(out / "lanes_one"), "--json", timeout=300)
    again = [json.loads(line) for line in (out / "lanes_one" / "slots.jsonl").read_text().splitlines()] \
        if (out / "lanes_one" / "slots.jsonl").is_file() else []
    server = again[0]["server"] if again else {}
    check(one.returncode == 0 and server.get("pid") == kept.get("pid") and server.get("restarted") is False,
          f"stopping lane 1 left lane 0's server running untouched (pid {kept.get('pid')} -> {server.get('pid')}, "
          f"restarted {server.get('restarted')})")
    check(not server_pids() and not gpu_used_mib() and not lane_records(),
          f"nothing left: pids {server_pids()}, GPU apps {gpu_used_mib()}")

"""The helpers of the real-server tier (benchmarks/real_sglang.py, benchmarks/real_lanes.py): ddtune's
own commands run as a user would, the PASS/FAIL lines, and what the tier reads beside ddtune (the
server's /metrics counters, its processes, nvidia-smi), so that the figures are checked against the
server's own."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PORT = 30200
failures: list[str] = []


def check(ok: bool, what: str) -> bool:
    print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)
    if not ok:
        failures.append(what)
    return ok


def ddtune(config: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tui.cli", "--config", str(config), *args]
    print(f"$ ddtune {' '.join(args)}", flush=True)
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    print(f"  exit {done.returncode} in {time.monotonic() - t0:.1f} s", flush=True)
    for line in done.stderr.strip().splitlines()[-12:]:
        print(f"  | {line}", flush=True)
    return done


def write_config(path: Path, args, pair: str, window: int) -> Path:
    root = Path(getattr(args, pair))
    env = {k: v for k, v in (item.split("=", 1) for item in args.env)}
    lines = ["[server]", 'backend = "sglang"', f"python = {json.dumps(args.python)}",
             f"model = {json.dumps(str(root / 'target'))}", f"draft_model = {json.dumps(str(root / 'draft'))}",
             'host = "127.0.0.1"', f"port = {PORT}", "ready_timeout_s = 420",
             f"extra_args = {json.dumps(args.sglang_args)}", "[server.env]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in env.items()]
    lines += ["[knobs]", f"window = {window}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def status(config: Path) -> dict:
    done = ddtune(config, "status", "--json", timeout=60)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {}


def window_check(doc: dict) -> dict:
    return next((c for c in doc.get("checks", []) if c.get("name") == "window"), {})


def counters() -> tuple[float, float]:
    """(generation tokens, verify calls) summed over label sets, from the server's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    sums = {"sglang:generation_tokens_total": 0.0, "sglang:spec_verify_calls_total": 0.0}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return sums["sglang:generation_tokens_total"], sums["sglang:spec_verify_calls_total"]


def server_pids() -> list[int]:
    """Live SGLang server processes: the launcher and its children (named ``sglang::...``)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            line = " ".join(proc.info["cmdline"] or [])
            if proc.info["status"] != psutil.STATUS_ZOMBIE and ("sglang.launch_server" in line
                                                                or line.startswith("sglang::")):
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


def gpu_used_mib() -> list[int]:
    done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True)
    return [int(line.split(",")[1]) for line in done.stdout.strip().splitlines() if "," in line]

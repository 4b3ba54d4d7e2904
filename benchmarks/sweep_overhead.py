"""How much of a sweep is measuring, and how much is restarting: runs ``ddtune sweep`` against the
simulator backend (paced by its performance model) and prints wall time, restart share, cells and
the report's verdict. Also times ``ddtune report`` over the result.

    python benchmarks/sweep_overhead.py [--load-seconds 0.5] [PRESET ...]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("presets", nargs="*", default=["b8-t4-w2048", "b16-t4-w2048", "b4-t4-w2048"])
    ap.add_argument("--load-seconds", default="0.5")
    opts = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "ddtune.toml"
        cfg.write_text(f'[server]\nbackend = "sim"\nport = {port}\n'
                       f'extra_args = ["--sim-load-seconds", "{opts.load_seconds}"]\n')
        env = dict(os.environ, DDTUNE_STATE_DIR=str(Path(tmp) / "state"), PYTHONPATH=str(REPO))
        out = Path(tmp) / "sweep"
        cmd = [sys.executable, "-m", "tui.cli", "--config", str(cfg), "sweep", *opts.presets, "--baseline",
               "--contexts", "60", "1024", "--concurrency", "1", "8", "--max-tokens", "128", "--no-eval",
               "--out", str(out), "--json"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode not in (0, 1):
            sys.exit(r.stderr[-2000:])
        doc = json.loads(r.stdout)["report"]
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tui.cli", "report", str(out)], cwd=REPO, env=env,
                       capture_output=True, check=True)
        report_s = time.perf_counter() - t0
    rs = doc["restarts"]
    print(f"sweep of {len(opts.presets)} presets + baseline, 4 cells each: {wall:.1f} s wall")
    print(f"restarts: {rs['count']}, {rs['total_s']:.1f} s ({rs['total_s'] / wall * 100:.0f}% of the wall time), "
          f"median {rs['median_s']:.2f} s with --sim-load-seconds {opts.load_seconds}")
    best = doc["best_overall"]
    m = best["margin"] or {}
    value, lo, hi = (m.get("value", 1) - 1) * 100, ((m.get("lo") or 1) - 1) * 100, ((m.get("hi") or 1) - 1) * 100
    print(f"best overall: {best['config']} (x{best['value']:.2f} vs baseline), ahead of {best['runner_up']} by "
          f"{value:.1f}% [{lo:.1f}%, {hi:.1f}%]")
    print(f"ddtune report over it: {report_s:.2f} s (process start included)")


if __name__ == "__main__":
    main()

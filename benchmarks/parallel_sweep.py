"""Wall time of a parallel sweep against the same sweep run serially, on the simulator.

Each configuration's server takes ``--load`` seconds to start (default 8, a stand-in for a model's
weight load, ~6 minutes on a real box) and then a short bench. ``ddtune sweep`` runs as a real
process: serially, then with ``--parallel 2`` and (for four configurations) ``--parallel 4``, each
lane on its own simulated GPU (``--gpus``) and port. Prints the wall times and their ratio to the
serial run; target: two configurations with ``--parallel 2`` in at most 0.75x the serial time
(ideal 0.5x: the restarts overlap, the host's CPU is shared).

    python benchmarks/parallel_sweep.py [--load 8] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PRESETS = ("b4-t4-w2048", "b8-t4-w2048", "b16-t4-w2048", "b8-t4-nowindow")
BENCH = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "4", "--max-tokens", "64",
         "--warmup", "0", "--no-eval")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sweep(work: Path, name: str, load: float, configs: tuple[str, ...], lanes: int | None) -> float:
    """One sweep in its own state dir; its wall time in seconds (exits on a failed sweep)."""
    folder = work / name
    folder.mkdir()
    config = folder / "ddtune.toml"
    config.write_text(f'[server]\nbackend = "sim"\nport = {free_port()}\n'
                      f'extra_args = ["--sim-load-seconds", "{load:g}"]\nready_timeout_s = 300\n')
    argv = [sys.executable, "-m", "tui.cli", "--config", str(config), "sweep", *configs, *BENCH,
            "--out", str(folder / "sweep")]
    if lanes:
        argv += ["--parallel", str(lanes), "--gpus", ",".join(str(i) for i in range(lanes))]
    env = {**os.environ, "DDTUNE_STATE_DIR": str(folder / "state"), "PYTHONPATH": str(REPO)}
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - t0
    if done.returncode != 0:
        sys.exit(f"{name}: ddtune sweep failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=8.0, help="simulated load seconds per start (default 8)")
    parser.add_argument("--repeats", type=int, default=1, help="measure each sweep this many times (default 1)")
    args = parser.parse_args()
    print(f"simulated load {args.load:g} s per start; bench: {' '.join(BENCH)}; host: {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="ddtune-parallel-") as tmp:
        work = Path(tmp)
        for configs, lanes in ((PRESETS[:2], (2,)), (PRESETS, (2, 4))):
            for r in range(args.repeats):
                serial = sweep(work, f"serial-{len(configs)}-{r}", args.load, configs, None)
                line = f"{len(configs)} configurations: serial {serial:6.1f} s"
                for n in lanes:
                    took = sweep(work, f"p{n}-{len(configs)}-{r}", args.load, configs, n)
                    line += f" | --parallel {n}: {took:6.1f} s = {took / serial:.2f}x"
                print(line, flush=True)


if __name__ == "__main__":
    main()

"""Wave release vs staggered: how the server admits a cell's requests, and what TTFT and ITL read.

Starts ``python -m backends.sim`` (plain server, the default paced performance model), then runs
``ddtune bench`` one cell at a time, alternating ``--release wave`` and ``--release staggered``, and
reads from the simulator's log how many prefill batches admitted the cell's requests (the sizing and
warmup requests are single and come first: they are left out) and their sizes. Prints, per cell and
mode: prefill batches, the largest, TTFT mean/p50, step gap p50 and ITL per token p50. Nothing is
asserted.

    python benchmarks/wave_release.py [--concurrency 32 64] [--context 1024] [--rounds 2] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BATCH = re.compile(r"Prefill batch, #new-seq: (\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ddtune-waves-"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "DDTUNE_STATE_DIR": str(tmp / "state")}
    port = free_port()
    log = tmp / "sim.log"
    with open(log, "wb") as out:
        sim = subprocess.Popen([sys.executable, "-m", "backends.sim", "--model-path", "Qwen/Qwen3-8B", "--port",
                                str(port), "--sim-load-seconds", "0", "--max-running-requests", "128"],
                               cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while b"ready to roll" not in log.read_bytes():
            if sim.poll() is not None:
                sys.exit(f"the simulator exited:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        print(f"{'conc':>4} {'release':>9} {'round':>5} {'prefills':>8} {'largest':>7} {'TTFT mean':>9} "
              f"{'TTFT p50':>8} {'gap p50':>7} {'tok p50':>7}  (ms)  prefill batch sizes")
        for conc in args.concurrency:
            for rnd in range(1, args.rounds + 1):
                for mode in ("wave", "staggered"):
                    before = len(log.read_bytes())
                    done = subprocess.run(
                        [sys.executable, "-m", "tui.cli", "bench", "--url", f"http://127.0.0.1:{port}", "--contexts",
                         str(args.context), "--concurrency", str(conc), "--max-tokens", str(args.max_tokens),
                         "--release", mode, "--json"], cwd=REPO, env=env, capture_output=True, text=True)
                    if done.returncode != 0:
                        sys.exit(done.stderr)
                    (cell,) = json.loads(done.stdout)["cells"]
                    sizes = [int(n) for n in BATCH.findall(log.read_bytes()[before:].decode("utf-8", "replace"))]
                    measured = _measured(sizes, cell["requests"])
                    t, g, k = cell["ttft_ms"], cell["itl_ms"], cell["itl_token_ms"]
                    print(f"{conc:>4} {mode:>9} {rnd:>5} {len(measured):>8} {max(measured, default=0):>7} "
                          f"{t['mean']:>9.1f} {t['p50']:>8.1f} {g['p50']:>7.2f} {k['p50']:>7.2f}       "
                          f"{measured[::-1]}")
    finally:
        os.killpg(sim.pid, signal.SIGKILL)
        sim.wait()


def _measured(sizes: list[int], requests: int) -> list[int]:
    """The prefill batches of the measured requests: the last ones, adding up to ``requests``."""
    out, total = [], 0
    for n in reversed(sizes):
        if total >= requests:
            break
        out.append(n)
        total += n
    return out


if __name__ == "__main__":
    main()

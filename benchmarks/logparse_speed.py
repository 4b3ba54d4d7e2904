"""How fast parse_line and the whole inspect fold run on a realistic mixed log; prints figures.

The mix follows a busy server: mostly uvicorn access lines and prefill/decode lines, some
unrelated chatter (import warnings, NCCL, flashinfer JIT), tqdm redraws, and one startup.

    python benchmarks/logparse_speed.py [--lines N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.logs.splitter import split_lines  # noqa: E402
from backends.logs.parse import parse_line  # noqa: E402
from backends.logs.summary import summarize  # noqa: E402

LOGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "logs"
T = "[2026-11-30 09:01:10 TP0] "
MIX = [
    (30, '[2026-11-30 09:01:10] INFO:     127.0.0.1:51300 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
    (20, T + "Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, "
             "#queue-req: 0, #pending-token: 0, cuda graph: True, input throughput (token/s): 559.53"),
    (15, T + "Decode batch, #running-req: 8, #token: 7200, token usage: 0.01, accept len: 3.40, accept rate: 0.16, "
             "cuda graph: True, gen throughput (token/s): 1104.93, #queue-req: 0"),
    (15, "[2026-11-30 09:01:10 TP1] Ignore import error when loading sglang.srt.models.foo: No module named 'cuda'"),
    (8, "2025-03-27 21:33:31,890 - INFO - flashinfer.jit: Loading JIT ops: batch_decode_with_kv_cache_dtype_q_bf16"),
    (5, "Capturing batches (bs=32 avail_mem=27.49 GB):  12%|█▎        | 1/8 [00:05<00:39,  5.62s/it]"),
    (4, "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"),
    (3, '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 3011, in event_loop'),
]


def build(n: int) -> list[str]:
    rnd = random.Random(0)
    weights = [w for w, _ in MIX]
    lines = [rnd.choices(MIX, weights)[0][1] for _ in range(n)]
    startup = split_lines((LOGS / "dflash_0523_tp2.log").read_text())
    return startup + lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    n = ap.parse_args().lines
    lines = build(n)
    for label, fn in (("parse_line", lambda: [parse_line(x) for x in lines]),
                      ("summarize (parse + fold)", lambda: summarize(lines))):
        best = min(_timed(fn) for _ in range(3))
        print(f"{label:<26} {len(lines) / best:>12,.0f} lines/s  ({len(lines):,} lines, best of 3: {best:.3f} s)")
    miss = ["[2026-11-30 09:01:10 TP1] Ignore import error when loading x: y"] * n
    best = min(_timed(lambda: [parse_line(x) for x in miss]) for _ in range(3))
    print(f"{'unmatched line':<26} {n / best:>12,.0f} lines/s")
    chunk = "\n".join(lines)
    best = min(_timed(lambda: split_lines(chunk)) for _ in range(3))
    print(f"{'split_lines':<26} {len(chunk) / best / 1e6:>12,.1f} MB/s")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()

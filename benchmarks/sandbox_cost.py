"""What one graded answer costs in the sandbox (bubblewrap): wall time of ``run_tests`` for a small correct
answer (fib, six tests), median and p90 over N runs, sequential and two at a time (the eval's default
``grade_parallel``), and the CPU of one answer (this process and every process the run made). Prints
figures; where bubblewrap cannot run here it says why.

CPU is counted as a child subreaper that reaps what is orphaned: bubblewrap's monitor exits without
reaping the namespace's pid 1, so a plain ``getrusage(RUSAGE_CHILDREN)`` misses the answer's own CPU.

    python benchmarks/sandbox_cost.py [--runs N]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workloads.grading.problems import load_problems, select_problems  # noqa: E402
from workloads.grading.sandbox import run_tests  # noqa: E402
from workloads.grading.sandbox_isolation import KIND, probe  # noqa: E402


def one(problem) -> float:
    start = time.perf_counter()
    result = run_tests(problem.solution, problem.function, problem.tests)
    if result.verdict != "pass":
        raise SystemExit(f"the reference answer did not pass: {result.verdict} {result.detail}")
    return time.perf_counter() - start


def cpu_s() -> float:
    """CPU seconds of this process and of every child it has reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def reap_orphans() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    fib = select_problems(load_problems(), ["fib"])[0]
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the sandbox come here
    print(f"{'mode':8} {'median ms':>10} {'p90 ms':>8} {'2-parallel answers/s':>21} {'CPU ms/answer':>14}")
    why = probe()
    if why is not None:
        raise SystemExit(f"{KIND:8} unavailable: {why}")
    one(fib)  # warm: the probe and the first interpreter start
    time.sleep(0.3)
    reap_orphans()
    cpu0 = cpu_s()
    times = sorted(one(fib) for _ in range(args.runs))
    time.sleep(0.3)
    reap_orphans()
    cpu = (cpu_s() - cpu0) / args.runs * 1000
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: one(fib), range(args.runs)))
    rate = args.runs / (time.perf_counter() - start)
    print(f"{KIND:8} {statistics.median(times) * 1000:10.1f} {times[int(len(times) * 0.9) - 1] * 1000:8.1f} "
          f"{rate:21.1f} {cpu:14.1f}")

if __name__ == "__main__":
    main()

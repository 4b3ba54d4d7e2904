"""One of two graders at once (test_sandbox_graders.py): grade a correct answer RUNS times and print
the verdicts as JSON. Beside it a thread does, as often as it can, what every grader does before
each answer: make a cgroup (which first sweeps what look like a dead grader's leftovers). The other
grader's fresh cgroups must survive it.

    python pidns_grader.py REPO RUNS
"""

import json
import sys
import threading
import time

repo, runs = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, repo)

from workloads.grading import sandbox_cgroup  # noqa: E402
from workloads.grading.sandbox import run_tests  # noqa: E402

FIB = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"
done = threading.Event()
cgroups = sandbox_cgroup.unavailable() is None


def sweep() -> None:
    while not done.is_set():
        if cgroups:
            sandbox_cgroup.remove(sandbox_cgroup.create(1 << 30, 64))
        time.sleep(0.001)


sweeper = threading.Thread(target=sweep)
sweeper.start()
try:
    results = [run_tests(FIB, "fib", ["fib(10) == 55", "fib(1) == 1"]) for _ in range(runs)]
finally:
    done.set()
    sweeper.join()
print(json.dumps({"cgroups": cgroups, "results": [[r.verdict, r.detail] for r in results]}), flush=True)

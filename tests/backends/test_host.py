"""Host telemetry against real processes: the server's tree (group, session, descendants, orphans) and
its CPU%/RSS."""

from __future__ import annotations

import os
import sys
import time

import psutil

from backends.machine.host import HostSampler, server_tree_pids

# root -> child -> grandchild; each prints its pid. The grandchild starts its own session (setsid),
# so only descent, not the group or the session, can find it.
TREE = [sys.executable, "-c",
        "import os, subprocess, sys, time\n"
        "inner = \"import os, time; os.setsid(); print(os.getpid(), flush=True); time.sleep(60)\"\n"
        "mid = ('import subprocess, sys, time; '\n"
        "       'g = subprocess.Popen([sys.executable, \"-c\", %r]); '\n"
        "       'print(g.pid, flush=True); time.sleep(60)') % inner\n"
        "c = subprocess.Popen([sys.executable, '-c', mid], stdout=subprocess.PIPE, text=True)\n"
        "g = int(c.stdout.readline())\n"
        "print(c.pid, g, flush=True)\n"
        "time.sleep(60)\n"]
# The root starts a child in its group, prints the child's pid and exits: the child is orphaned.
ORPHANING = [sys.executable, "-c",
             "import subprocess, sys\n"
             "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
             "print(c.pid, flush=True)\n"]
BUSY = [sys.executable, "-c", "while True: pass"]


def test_tree_covers_descendants_group_and_session(spawn):
    root = spawn(TREE)
    child, grandchild = map(int, root.stdout.readline().split())
    spawn.groups.append(grandchild)   # it leads its own session and group: kill that too
    tree = server_tree_pids(root.pid)
    assert {root.pid, child, grandchild} <= tree
    assert os.getpid() not in tree
    assert all(psutil.pid_exists(p) for p in tree)


def test_orphans_are_found_by_pgid_after_the_root_died(spawn):
    root = spawn(ORPHANING)
    orphan = int(root.stdout.readline())
    root.wait(timeout=30)   # the root has exited and been reaped
    assert psutil.Process(orphan).ppid() != root.pid
    assert orphan in server_tree_pids(root.pid, pgid=root.pid)
    assert server_tree_pids(root.pid) == set()   # without the pgid nothing leads to it


def test_unknown_pid_gives_an_empty_tree():
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    assert server_tree_pids(pid) == set()


def test_own_session_is_never_swept_in():
    assert server_tree_pids(os.getpid()) == {os.getpid()} | {c.pid for c in psutil.Process().children(True)}


def test_host_sample_reads_ram_and_tree_rss(spawn):
    proc = spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"])
    assert proc.stdout.readline() == "up\n"  # the interpreter is loaded: sampling right after fork saw ~0 RSS
    snap = HostSampler().sample([proc.pid])
    assert snap.ram_total > 0 and 0 < snap.ram_used <= snap.ram_total
    assert snap.cpu_count >= 1 and 0.0 <= snap.cpu_percent <= 100.0
    assert snap.tree_pids == (proc.pid,)
    assert snap.tree_rss > 1 << 20   # a Python interpreter holds more than 1 MiB


def test_tree_cpu_percent_follows_a_busy_process(spawn):
    busy = spawn(BUSY)
    sampler = HostSampler()
    sampler.sample([busy.pid])          # primes the per-process counter
    ps = psutil.Process(busy.pid)
    start = sum(ps.cpu_times()[:2])
    deadline = time.monotonic() + 60
    while sum(ps.cpu_times()[:2]) - start < 0.2 and time.monotonic() < deadline:
        time.sleep(0.05)
    snap = sampler.sample([busy.pid])
    assert snap.tree_cpu_percent > 0.0


def test_dead_pids_drop_out_of_the_host_sample(spawn):
    proc = spawn([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    snap = HostSampler().sample([proc.pid])
    assert snap.tree_pids == () and snap.tree_rss == 0

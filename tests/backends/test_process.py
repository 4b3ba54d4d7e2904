"""Process groups and ports with real processes: spawn in a new session, stop the whole group."""

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from backends.launch.ownership import owned, stop_owned
from backends.launch.process import create_time, group_members, port_owner, spawn, wait_port_free

# A parent that ignores SIGTERM and leaves a child in its group that ignores SIGTERM too.
STUBBORN = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print(\"child up\", flush=True); time.sleep(600)'])\n"
    "print('parent up', flush=True)\n"
    "time.sleep(600)\n"
)
POLITE = "import time\nprint('up', flush=True)\ntime.sleep(600)\n"


def wait_for_text(path, text, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


@pytest.fixture
def spawned():
    procs = []
    yield procs
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
    for proc in procs:
        assert group_members(proc.pid) == []


def test_spawn_new_session_and_log(tmp_path, spawned):
    log = tmp_path / "s.log"
    proc = spawn([sys.executable, "-c", POLITE], dict(os.environ), log)
    spawned.append(proc)
    wait_for_text(log, "up")
    assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    assert os.getsid(proc.pid) == proc.pid


def test_polite_process_stops_on_sigterm(tmp_path, spawned):
    proc = spawn([sys.executable, "-c", POLITE], dict(os.environ, DDTUNE_LAUNCH_TOKEN="t1"), tmp_path / "p.log")
    spawned.append(proc)
    wait_for_text(tmp_path / "p.log", "up")
    report = stop_owned(owned(proc.pid, proc.pid, create_time(proc.pid), "t1"), term_timeout=30)
    assert report.terminated and report.left == ()
    assert proc.wait(timeout=10) == -signal.SIGTERM


def test_stubborn_group_gets_sigkill_children_included(tmp_path, spawned):
    log = tmp_path / "k.log"
    proc = spawn([sys.executable, "-c", STUBBORN], dict(os.environ, DDTUNE_LAUNCH_TOKEN="t2"), log)
    spawned.append(proc)
    wait_for_text(log, "child up")
    members = group_members(proc.pid)
    assert len(members) == 2 and proc.pid in members
    report = stop_owned(owned(proc.pid, proc.pid, create_time(proc.pid), "t2"), term_timeout=0.5)
    assert not report.terminated
    assert set(report.killed) == set(members) == set(report.stopped)
    assert report.left == ()
    assert group_members(proc.pid) == []
    for pid in members:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_port_owner_names_the_listener():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        owner = port_owner(port)
        assert owner is not None and owner.pid == os.getpid()
        assert f"pid {os.getpid()}" in owner.describe()
    assert wait_port_free(port, time.monotonic() + 30) is None
    assert port_owner(port) is None


def test_port_owner_names_the_listener_not_a_child_that_inherited_its_socket():
    """A child forked while we listen holds the socket too (until its exec closes it, or for good
    with pass_fds): the owner is the process that has held it longest, not the newest holder. CI
    once named a parallel lane's server, forked at that moment, as the holder of a test's port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                                 pass_fds=(sock.fileno(),))
        try:
            assert f"socket:[{os.fstat(sock.fileno()).st_ino}]" in {
                os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{child.pid}/fd")}
            owner = port_owner(port)
            assert owner is not None and owner.pid == os.getpid(), (owner, child.pid)
        finally:
            child.stdin.close()
            child.wait(30)

"""backends.launch.ownership over real processes: what a record proves, and what it does not."""

import os
import secrets
import signal
import subprocess
import sys
import time

import psutil
import pytest

from backends.launch.ownership import NotOurs, check_record, owned, stop_owned, token_holders

# this module's own: token_holders sees every process on the machine, and a test run beside this one
# (pytest -n) with the same token would be found here, or find these
TOKEN = secrets.token_hex(16)
WITH_TOKEN = ["env", f"DDTUNE_LAUNCH_TOKEN={TOKEN}", sys.executable]  # env execs python: same pid

# the child prints its own pid once it runs Python code: past its exec, its environ readable
PARENT_WITH_CHILD = ("import subprocess, sys, time; "
                     "subprocess.Popen([sys.executable, '-c', 'import os, time; print(os.getpid(), flush=True); "
                     "time.sleep(600)']); time.sleep(600)")


@pytest.mark.parametrize("pid, pgid, create_time, words", [
    (None, 5, 1.0, "no valid server pid"),
    (1, 1, 1.0, "no valid server pid"),
    (True, 5, 1.0, "no valid server pid"),
    (5000, 1, 1.0, "process group 1"),
    (5000, 0, 1.0, "process group 0"),
    (5000, -1, 1.0, "process group -1"),
    (5000, 5001, 1.0, "leader of its own group"),
    (5000, 5000, None, "no process create time"),
    (5000, 5000, "1.0", "no process create time"),
])
def test_records_that_cannot_name_a_group_of_ours(pid, pgid, create_time, words):
    with pytest.raises(NotOurs, match=words):
        check_record(pid, pgid, create_time)


def test_own_group_is_refused():
    me = psutil.Process()
    with pytest.raises(NotOurs, match="own group or session"):
        check_record(os.getpgrp(), os.getpgrp(), me.create_time())


@pytest.fixture
def family(spawn):
    parent = spawn([*WITH_TOKEN, "-c", PARENT_WITH_CHILD])
    child = int(parent.stdout.readline())
    return parent, child, psutil.Process(parent.pid).create_time()


def test_a_live_leader_owns_its_group(family):
    parent, child, started = family
    found = owned(parent.pid, parent.pid, started, TOKEN)
    assert found.leader_alive and set(found.pids) == {parent.pid, child}
    assert set(token_holders(TOKEN)) == {parent.pid, child}  # what a lost launch is found by


@pytest.mark.parametrize("token, words", [
    (None, "carries no launch token"),
    ("f" * 32, "carries another launch's token"),
])
def test_a_live_leader_with_its_true_create_time_is_not_proof(family, token, words):
    """pid, pgid and create time are public (/proc): a forged record names a stranger exactly."""
    parent, child, started = family
    with pytest.raises(NotOurs, match=f"refusing to signal pid {parent.pid}: .*{words}"):
        owned(parent.pid, parent.pid, started, token)
    assert parent.poll() is None


def test_a_stranger_without_any_token_is_refused(spawn):
    stranger = spawn([sys.executable, "-c", "import time; time.sleep(600)"])
    started = psutil.Process(stranger.pid).create_time()
    with pytest.raises(NotOurs, match="does not carry the launch token"):
        owned(stranger.pid, stranger.pid, started, TOKEN)


def test_a_leader_checked_as_its_spawn_returns_is_proven(spawn):
    """Popen returns once the exec is past its point of no return, and the new image's environ can
    still read empty then: the proof waits that moment out instead of calling our server a stranger."""
    # the token given as the launch gives it (not through env(1), whose own exec comes first)
    leader = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                              env={**os.environ, "DDTUNE_LAUNCH_TOKEN": TOKEN})
    spawn.groups.append(leader.pid)
    try:
        found = owned(leader.pid, leader.pid, psutil.Process(leader.pid).create_time(), TOKEN)
        assert found.leader_alive and set(found.pids) == {leader.pid}
    finally:
        leader.kill()
        leader.wait(30)


def test_a_stranger_with_an_empty_environment_is_refused(spawn):
    stranger = spawn(["env", "-i", sys.executable, "-c", "import time; print(1, flush=True); time.sleep(600)"])
    assert stranger.stdout.readline() == "1\n"
    with open(f"/proc/{stranger.pid}/environ", "rb") as fh:
        assert fh.read() == b""
    with pytest.raises(NotOurs, match="does not carry the launch token"):
        owned(stranger.pid, stranger.pid, psutil.Process(stranger.pid).create_time(), TOKEN)


def test_survivors_without_the_token_are_not_ours(spawn):
    """A dead leader's group: only members carrying the token are survivors of ours."""
    parent = spawn([sys.executable, "-c", PARENT_WITH_CHILD])  # no token anywhere
    child = int(parent.stdout.readline())
    started = psutil.Process(parent.pid).create_time()
    parent.kill()
    parent.wait()
    assert owned(parent.pid, parent.pid, started, TOKEN).pids == {}
    assert owned(parent.pid, parent.pid, started, None).pids == {}
    assert psutil.Process(child).is_running()
    os.kill(child, signal.SIGKILL)


def test_a_dead_leader_leaves_survivors_that_are_still_ours(family):
    parent, child, started = family
    parent.kill()
    parent.wait()
    found = owned(parent.pid, parent.pid, started, TOKEN)
    assert not found.leader_alive and set(found.pids) == {child}
    report = stop_owned(found, term_timeout=10)
    assert report.terminated and report.stopped == (child,) and not report.leader_alive
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_a_record_of_a_later_start_does_not_own_an_older_process(family):
    parent, child, started = family
    with pytest.raises(NotOurs, match="started before the recorded server"):
        owned(parent.pid, parent.pid, started + 60, TOKEN)
    assert parent.poll() is None


def test_members_older_than_the_record_are_not_ours(spawn):
    """A process in the recorded group that started before the recorded leader is not its child."""
    parent = spawn([sys.executable, "-c", PARENT_WITH_CHILD])
    int(parent.stdout.readline())
    started = psutil.Process(parent.pid).create_time()
    parent.kill()
    parent.wait()
    # the child started after the parent: pretend the record's leader started later than both
    assert owned(parent.pid, parent.pid, started + 60, proof=False).pids == {}


def test_stop_sends_nothing_to_a_pid_reused_after_the_listing(spawn):
    """The pidfd check: a listed pid whose create time changed is not signalled."""
    from backends.launch.ownership import _signal_pid

    proc = spawn([sys.executable, "-c", "import time; time.sleep(600)"])
    started = psutil.Process(proc.pid).create_time()
    assert not _signal_pid(proc.pid, started - 5, signal.SIGKILL)  # "a different process"
    time.sleep(0.1)
    assert proc.poll() is None
    assert _signal_pid(proc.pid, started, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


def test_stopping_never_touches_our_own_process():
    me = psutil.Process()
    with pytest.raises(NotOurs):
        owned(me.pid, os.getpgrp(), me.create_time())

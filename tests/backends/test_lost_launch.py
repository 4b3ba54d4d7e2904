"""No kill of ddtune and no full or read-only disk loses a server (issue 19, item 3).

ddtune records a launch before the process exists; killed at any step of it (DDTUNE_CRASH_AT makes
the kill land at a chosen step: after the intent record, right after the spawn, after the pid), the
next ``up`` finds the server by its launch token, records it and re-attaches: exactly one server,
which ``down`` stops. A state dir that cannot take the intent record refuses the launch in one line.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess

import pytest

from tests.backends.lifecycle_support import write_config
from tests.backends.state_support import launched, leaders
from tests.helpers import ddtune_cmd, ddtune_env, run_ddtune

FAST = ("--sim-load-seconds", "0.2")


def recorded_pid(state_dir) -> int | None:
    path = state_dir / "server.json"
    return json.loads(path.read_text())["pid"] if path.exists() else None


@pytest.mark.parametrize("step", ["after-intent", "after-spawn", "after-pid"])
@pytest.mark.parametrize("command", ["restart", "up"])
def test_a_killed_launch_leaves_one_server_that_up_finds_and_down_stops(
        tmp_path, state_dir, no_leftovers, command, step):
    cfg = write_config(tmp_path, extra=FAST)
    if command == "restart":  # a server to replace: restart stops it before it launches
        out = run_ddtune("--config", str(cfg), "up")
        assert out.returncode == 0, out.stderr
        old = recorded_pid(state_dir)
    out = run_ddtune("--config", str(cfg), command, DDTUNE_CRASH_AT=step)
    assert out.returncode == -signal.SIGKILL, out.stderr
    spawned = leaders(state_dir)
    assert len(spawned) == (0 if step == "after-intent" else 1), spawned
    if command == "restart":
        assert old not in spawned
    assert json.loads((state_dir / "launch.json").read_text())["token"]  # the intent outlived the kill

    out = run_ddtune("--config", str(cfg), "up")
    assert out.returncode == 0, out.stderr
    (server,) = leaders(state_dir)  # exactly one: never a second beside the lost one
    assert recorded_pid(state_dir) == server
    if step != "after-intent":
        assert server == spawned[0]  # the lost server itself, re-attached
    if step in ("after-intent", "after-spawn"):  # what server.json did not name yet
        assert ("by its launch token" in out.stderr) == (step == "after-spawn"), out.stderr

    out = run_ddtune("--config", str(cfg), "down")
    assert out.returncode == 0, out.stderr
    assert f"stopped pid {server}" in out.stderr + out.stdout
    assert launched(state_dir) == {}


def test_down_stops_a_lost_server_it_never_recorded(tmp_path, state_dir, no_leftovers):
    cfg = write_config(tmp_path, extra=FAST)
    out = run_ddtune("--config", str(cfg), "up", DDTUNE_CRASH_AT="after-spawn")
    assert out.returncode == -signal.SIGKILL, out.stderr
    (lost,) = leaders(state_dir)
    assert not (state_dir / "server.json").exists()
    out = run_ddtune("--config", str(cfg), "down")
    assert out.returncode == 0, out.stderr
    assert f"found pid {lost} by its launch token" in out.stderr
    assert launched(state_dir) == {}


def in_private_mounts(script: str, cfg, state_dir, command: str = "up") -> subprocess.CompletedProcess[str]:
    """``script`` (sh) then ``ddtune --config CFG COMMAND`` in a private mount namespace (root): the
    mounts it makes on the state dir vanish with it."""
    unshare = shutil.which("unshare")
    assert unshare, "these tests need unshare(1) (util-linux)"
    run = " ".join(ddtune_cmd("--config", str(cfg), command))
    return subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-ec", f"{script}\nexec {run}"],
                          env=ddtune_env(DDTUNE_STATE_DIR=str(state_dir)), capture_output=True, text=True,
                          timeout=120)


def test_a_read_only_state_dir_is_one_line_and_no_launch(tmp_path, state_dir, no_leftovers):
    """chmod does not stop root: the dir is a read-only bind mount."""
    cfg = write_config(tmp_path, extra=FAST)
    out = in_private_mounts(f"mount --bind {state_dir} {state_dir}\nmount -o remount,bind,ro {state_dir}",
                            cfg, state_dir)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("ddtune: error:")]
    assert "Read-only file system" in line and str(state_dir) in line, line
    assert "hint: point DDTUNE_STATE_DIR at a writable directory" in out.stderr
    assert launched(state_dir) == {}


def test_a_full_state_dir_refuses_the_launch_it_cannot_record(tmp_path, state_dir, no_leftovers):
    """A tiny tmpfs, filled: the lock still opens, the intent record cannot be written."""
    cfg = write_config(tmp_path, extra=FAST)
    fill = (f"mount -t tmpfs -o size=64k,mode=700 ddtune-full {state_dir}\n"
            f"mkdir -m 700 {state_dir}/logs\n"
            f"head -c 1M /dev/zero > {state_dir}/fill 2>/dev/null || true")
    out = in_private_mounts(fill, cfg, state_dir)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("ddtune: error:")]
    assert "launch.json" in line and "No space left on device" in line, line
    assert "hint: free space there" in out.stderr
    assert "launched pid" not in out.stderr
    assert launched(state_dir) == {}


def restart_on_a_full_copy(cfg, state_dir, tmp_path) -> subprocess.CompletedProcess[str]:
    """``ddtune restart`` where the state dir is a full tmpfs holding a copy of the real one: the
    server it records (launched outside) is real, the disk it sees is full."""
    copy = tmp_path / "state-copy"
    return in_private_mounts(f"cp -a {state_dir} {copy}\n"
                             f"mount -t tmpfs -o size=1m,mode=700 ddtune-full {state_dir}\n"
                             f"cp -a {copy}/. {state_dir}/\n"
                             f"head -c 8M /dev/zero > {state_dir}/fill 2>/dev/null || true", cfg, state_dir, "restart")


def restart_with_one_inode_left(cfg, state_dir, tmp_path) -> subprocess.CompletedProcess[str]:
    """The same on a copy with room for one more file (tmpfs ``nr_inodes``): enough for the record's
    proof alone, not for the launch's log file beside its record (the red team's variant)."""
    copy = tmp_path / "state-copy"
    return in_private_mounts(f"cp -a {state_dir} {copy}\n"
                             f"mount -t tmpfs -o size=64m,nr_inodes=1000,mode=700 ddtune-inodes {state_dir}\n"
                             f"cp -a {copy}/. {state_dir}/\n"
                             f"mount -o remount,nr_inodes=$(( $(df --output=iused {state_dir} | tail -1) + 1 )) "
                             f"{state_dir}", cfg, state_dir, "restart")


@pytest.mark.parametrize("disk", ["full", "one-inode", "read-only"])
def test_a_restart_that_could_not_record_its_launch_leaves_the_old_server_serving(
        tmp_path, state_dir, no_leftovers, disk):
    """Issue 28, item 7: the restart proves the state dir takes the new launch's record before it stops
    anything; a full tmpfs, one with room for a single more file, or a read-only bind mount is one
    line, and the healthy server stays up and recorded."""
    cfg = write_config(tmp_path, extra=FAST)
    out = run_ddtune("--config", str(cfg), "up")
    assert out.returncode == 0, out.stderr
    old = recorded_pid(state_dir)
    before = (state_dir / "server.json").read_bytes()
    if disk in ("full", "one-inode"):
        out = (restart_on_a_full_copy if disk == "full" else restart_with_one_inode_left)(cfg, state_dir, tmp_path)
        assert out.returncode == 1, out.stderr
        (line,) = [x for x in out.stderr.splitlines() if x.startswith("ddtune: error:")]
        assert "No space left on device" in line and "hint: free space there" in out.stderr
    else:
        out = in_private_mounts(f"mount --bind {state_dir} {state_dir}\nmount -o remount,bind,ro {state_dir}",
                                cfg, state_dir, "restart")
        assert out.returncode == 2, out.stderr
        (line,) = [x for x in out.stderr.splitlines() if x.startswith("ddtune: error:")]
        assert "Read-only file system" in line and str(state_dir) in line, line
    assert "Traceback" not in out.stderr
    assert "stopping old server" not in out.stderr and "launched pid" not in out.stderr
    assert leaders(state_dir) == [old]  # the old server, and no other
    assert (state_dir / "server.json").read_bytes() == before
    status = run_ddtune("--config", str(cfg), "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == old, status.stdout + status.stderr
    assert json.loads(status.stdout)["phase"] == "ready"
    out = run_ddtune("--config", str(cfg), "down")
    assert out.returncode == 0 and f"stopped pid {old}" in out.stderr + out.stdout, out.stderr

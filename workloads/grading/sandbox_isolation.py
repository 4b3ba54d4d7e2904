"""The OS boundary of the grading sandbox: bubblewrap's command line, the probe that checks it from
inside, and what ``ddtune doctor`` reports of it.

bubblewrap (``bwrap``) gives the child new PID, mount, network, IPC, UTS and cgroup namespaces over a
root that holds only the interpreter, its shared libraries and its stdlib, read-only (an
allow-list: sandbox_view.py; no site-packages, nothing of ddtune), a fresh /proc of its own PID
namespace, a few /dev nodes and a size-capped tmpfs as /tmp and working directory; it installs the
seccomp filter (sandbox_seccomp.py), clears the environment, starts a new session and dies with
its parent. Grading needs it: where bwrap is missing or cannot build its namespaces here, grading
is refused with the reason and a hint (``ConfigError``), and ``ddtune doctor`` says so. (ddtune once
rebuilt this boundary itself with util-linux ``unshare`` and mount(2)/pivot_root(2) through ctypes,
and fell back to rlimits in a host folder without namespaces; both went in issue 33: the first
duplicated bubblewrap, the second let an answer read the hidden tests and signal ddtune.)
The boundary is probed once per process by running Python inside it, which must not find ddtune's
own files.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from backends.core import ConfigError
from workloads.grading.sandbox_seccomp import filter_fd
from workloads.grading.sandbox_view import CANARY_PREFIX, View, canaries, guarded, view

KIND = "bwrap"
TMPFS_BYTES = 64 << 20
CHILD_SOURCE = Path(__file__).with_name("sandbox_child.py").read_text(encoding="utf-8")
# The child's code reaches it compiled, at the head of its stdin: compiling sandbox_child.py under
# ``-c`` cost each graded answer about as much CPU as the interpreter's start. This line reads it.
CHILD_BOOT = "import marshal,sys;exec(marshal.loads(sys.stdin.buffer.read(int(sys.argv.pop(1)))))"
UID_BASE, UID_SPAN = 0x6DD00000, 1 << 20  # where a root grader's per-run uids come from
HINT = ("install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap): ddtune runs model code only "
        "inside it; as a user, the kernel must also allow unprivileged user namespaces")


@dataclass(frozen=True)
class Isolation:
    kind: str  # "bwrap": the only sandbox ddtune grades in
    detail: str


def interpreter() -> str:
    """The real interpreter behind this one (a venv's python links to it; no venv is mounted)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def layout(uid: int | None) -> View:
    """The child's filesystem (sandbox_view.py): the interpreter, its libraries and its stdlib, and
    setpriv where bwrap runs it inside to drop a root grader to ``uid``. The same for every answer of
    this process (worked out once)."""
    return view(interpreter(), (shutil.which("setpriv") or "setpriv",) if uid is not None else ())


def as_root() -> bool:
    """Root builds the namespaces itself and then drops to an unprivileged id: a user namespace
    made by root maps the child back to host uid 0, whose owner permissions open /proc/sys."""
    return os.geteuid() == 0


def sandbox_uid() -> int:
    """A fresh unprivileged host uid (and gid) for one run as root: nobody else's files or processes,
    so RLIMIT_NPROC counts this answer's processes only."""
    while True:
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


def _drop(uid: int | None) -> list[str]:
    """setpriv to ``uid`` with no capability left in any set and no way to regain one."""
    ids = ["--reuid", str(uid), "--regid", str(uid), "--clear-groups"] if uid is not None else []
    return [shutil.which("setpriv") or "setpriv", *ids, "--no-new-privs", "--inh-caps=-all",
            "--bounding-set=-all", "--"]


def bwrap_argv(bwrap: str, uid: int | None, seccomp_fd: int | None = None) -> list[str]:
    """As root: no user namespace, the drop to ``uid`` inside; else a user namespace that cannot
    make another. Either way the child holds no capability, / and /dev are read-only, the
    kernel's knobs under /proc are bwrap's read-only binds, and /tmp is a sized tmpfs. With
    ``seccomp_fd`` bwrap installs the filter read from it just before it runs the command."""
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--clearenv"]
    argv += ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    argv += ["--cap-drop", "ALL"] if uid is None else []
    argv += ["--unshare-user", "--disable-userns"] if uid is None else []
    seen = layout(uid)
    # the answer's /tmp first, so that a part of the view below /tmp is bound over it, not hidden under it
    argv += ["--size", str(TMPFS_BYTES), "--perms", "1777", "--tmpfs", "/tmp"]
    for parent in seen.parents:  # made 0755: bwrap copies a parent's mode, and /root is 0700
        argv += ["--perms", "0755", "--dir", parent]
    for path in seen.sources():
        argv += ["--ro-bind", path, path]
    for target, link in seen.links:
        argv += ["--symlink", target, link]
    for path in seen.covers:
        argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--"]
    return argv + (_drop(uid) if uid is not None else [])


@dataclass(frozen=True)
class Facts:
    """The sandbox seen from inside by the probe: what ``ddtune doctor`` reports."""

    uid: int
    no_capabilities: bool
    proc_sys_read_only: bool
    root_read_only: bool
    seccomp: str | None  # None: the filter took; else why not


@dataclass(frozen=True)
class Protection:
    """One layer of the grading sandbox as ``ddtune doctor`` reports it: active, missing (False),
    or a weaker stand-in (None)."""

    name: str
    active: bool | None
    detail: str


@functools.cache
def child_code() -> bytes:
    """sandbox_child.py compiled once per process (``marshal``; the child runs this same interpreter):
    what ``run_argv``'s command reads first on its stdin, before the task."""
    return marshal.dumps(compile(CHILD_SOURCE, "<sandbox child>", "exec"))



def run_argv(seccomp_fd: int | None = None) -> list[str]:
    """The command line up to the child's own arguments for one run: bubblewrap's, then ``python -I -S
    -u -c CHILD_BOOT``. As root the child drops to a fresh unprivileged uid inside. The child's stdin
    must begin with ``child_code()``; ``seccomp_fd``: ``filter_fd``'s, passed to bwrap."""
    uid = sandbox_uid() if as_root() else None
    return [*bwrap_argv(shutil.which("bwrap") or "bwrap", uid, seccomp_fd),
            interpreter(), "-I", "-S", "-u", "-c", CHILD_BOOT, str(len(child_code()))]


def _look(paths: list[str]) -> dict | str:
    """What a sandboxed child sees from inside (sandbox_child.facts), ``paths`` among it, or why
    Python does not run inside it (one line)."""
    missing = [t for t in ["bwrap"] + (["setpriv"] if as_root() else []) if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    try:
        with filter_fd() as seccomp_fd:
            done = subprocess.run([*run_argv(seccomp_fd), "facts", "1" if seccomp_fd is not None else "", *paths],
                                  env={}, capture_output=True, timeout=20, input=child_code(), umask=0o022, cwd="/",
                                  pass_fds=() if seccomp_fd is None else (seccomp_fd,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run it: {exc}"
    try:
        seen = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        if type(seen) is dict and type(seen.get("visible")) is list:
            return seen
    except (ValueError, IndexError):
        pass
    why = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return f"cannot run Python inside it: {why[:200]}"


@functools.cache
def facts() -> Facts | str:
    """The sandbox's facts here, or why Python does not run inside it, or why it must not be used (one
    line). Cached per process. A sandbox whose child finds ddtune's own files is refused."""
    seen = _look(guarded())
    if isinstance(seen, str):
        return seen
    try:
        found = Facts(uid=int(seen["uid"]), no_capabilities=int(seen["cap_eff"], 16) == 0,
                      proc_sys_read_only=not seen["proc_sys_writable"], root_read_only=not seen["root_writable"],
                      seccomp=seen["seccomp"])
    except (ValueError, KeyError, TypeError):
        return f"cannot run Python inside it: it reported {str(seen)[:200]}"
    if seen["visible"]:
        return f"ddtune's own files are visible inside it ({seen['visible'][0]}): answers could read the hidden tests"
    return found


def hidden_tests() -> Protection:
    """The proof ``ddtune doctor`` gives that answers cannot look the expected values up: canaries beside
    the hidden tests' file and beside ddtune's packages, and those files themselves, not found by a
    sandboxed child."""
    with canaries() as (placed, refused):
        seen = _look(placed + guarded())
    if isinstance(seen, str):
        return Protection("hidden tests", False, seen)
    if seen["visible"]:
        where = dict.fromkeys(f"a canary in {os.path.dirname(p)}" if os.path.basename(p).startswith(CANARY_PREFIX)
                              else p for p in seen["visible"])
        return Protection("hidden tests", False, f"an answer finds {', '.join(where)}")
    detail = (f"an answer finds neither the problems file nor ddtune's packages, nor {len(placed)} canaries "
              "placed beside them" if placed else "an answer finds neither the problems file nor ddtune's packages")
    return Protection("hidden tests", True if placed else None,
                      detail + (f" (no canary could be placed in {'; '.join(refused)})" if refused else ""))


def probe() -> str | None:
    """None when Python runs inside the sandbox here, else why not (one line)."""
    found = facts()
    return found if isinstance(found, str) else None


def protections() -> list[Protection]:
    """Each protection of the sandbox as the probe saw it from inside."""
    from workloads.grading import sandbox_cgroup

    seen = facts()
    if isinstance(seen, str):
        return [Protection("sandbox", False, seen)]
    who = f"host uid {seen.uid}, a fresh one per answer" if as_root() else f"uid {seen.uid} inside a user namespace"
    found = [Protection("namespaces", True, "PID, mount, network, IPC, UTS"),
             Protection("unprivileged id", seen.uid != 0 or not as_root(), f"answers run as {who}"),
             Protection("no capabilities", seen.no_capabilities,
                        "every capability set empty" if seen.no_capabilities else "the answer keeps capabilities"),
             Protection("seccomp filter", seen.seccomp is None,
                        "no new namespaces, mounts, ptrace, keyring, bpf, SysV/POSIX shared memory, "
                        "sockets but unix and IP"
                        if seen.seccomp is None else str(seen.seccomp)),
             Protection("kernel knobs", seen.proc_sys_read_only,
                        "/proc/sys read-only" if seen.proc_sys_read_only else "/proc/sys is writable by the answer"),
             Protection("sized filesystems", seen.root_read_only,
                        f"only the interpreter and its stdlib, read-only; /tmp a {TMPFS_BYTES >> 20} MiB tmpfs"),
             hidden_tests()]
    why = sandbox_cgroup.unavailable()
    cpu = sandbox_cgroup.cpu_cap_unavailable() if why is None else why
    held = ("a cgroup caps memory (shared memory included), processes" + (" and CPU" if cpu is None else "")
            + " of the whole answer" + ("" if cpu is None else f"; a watchdog sums its CPU time ({cpu})"))
    found.append(Protection("whole-answer limits", True if why is None else None, held if why is None else
                            f"a watchdog sums the answer's memory and CPU time and counts processes ({why})"))
    return found


def isolation() -> Isolation:
    """The sandbox this process grades in: bubblewrap, checked from inside once per process. Raises
    ``ConfigError`` (the reason, and how to install it) where it cannot run here: ddtune never runs
    model code outside it."""
    why = probe()
    if why is not None:
        raise ConfigError(f"grading needs bubblewrap, and here {why}", hint=HINT)
    who = "a fresh unprivileged uid" if as_root() else "your uid in a user namespace"
    return Isolation(KIND, f"bubblewrap: new PID, mount, network, IPC namespaces; answers run as {who}, no "
                           "capabilities, seccomp; only the interpreter and its stdlib, read-only; sized tmpfs cwd")

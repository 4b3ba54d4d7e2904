"""Which OS boundary the grading sandbox can build here, and the command line that builds it.

Strongest first: ``bwrap`` (bubblewrap) or ``unshare`` (util-linux) give the child new user, PID,
mount, network, IPC and UTS namespaces over a root that holds only the interpreter, its shared
libraries and its stdlib, read-only (an allow-list: sandbox_view.py; no site-packages, nothing of
ddtune), a fresh /proc of its own PID namespace, a few /dev nodes and a size-capped tmpfs as /tmp
and working directory. ``rlimit`` is the fallback where no namespace can be made: resource limits,
its own session and a host temporary directory, with an audit hook as a tripwire; it is weak (the
answer can read host files and signal this process) and ddtune says so. Each kind is probed once per
process by running Python inside it, which must not find ddtune's own files;
``DDTUNE_SANDBOX=bwrap|unshare|rlimit`` forces one (tests use it to cover every mode).
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from backends.core.errors import ConfigError
from workloads.grading import sandbox_owner
from workloads.grading.sandbox_seccomp import child_filter, filter_fd
from workloads.grading.sandbox_view import CANARY_PREFIX, View, canaries, guarded, view

KINDS = ("bwrap", "unshare", "rlimit")
TMPFS_BYTES = 64 << 20
CHILD_SOURCE = Path(__file__).with_name("sandbox_child.py").read_text(encoding="utf-8")
INIT_SOURCE = Path(__file__).with_name("sandbox_init.py").read_text(encoding="utf-8")
# The child's code reaches it compiled, at the head of its stdin: compiling sandbox_child.py under
# ``-c`` cost each graded answer about as much CPU as the interpreter's start. This line reads it.
CHILD_BOOT = "import marshal,sys;exec(marshal.loads(sys.stdin.buffer.read(int(sys.argv.pop(1)))))"
TEMP_PREFIX = "ddtune-sandbox-"
UID_BASE, UID_SPAN = 0x6DD00000, 1 << 20  # where a root grader's per-run uids come from
_lock = threading.Lock()
_warned = False


@dataclass(frozen=True)
class Isolation:
    kind: str  # "bwrap", "unshare" or "rlimit"
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


def init_code(uid: int | None) -> str:
    """The unshare sandbox's pid 1 (sandbox_init.py) with this host's view and the run's ``uid``:
    the program its ``-c`` runs."""
    seen = layout(None)  # setpriv is not run inside: sandbox_init drops privileges itself
    return (f"{INIT_SOURCE}\nmain({TMPFS_BYTES!r}, {list(seen.parents)!r}, {list(seen.sources())!r}, "
            f"{list(seen.links)!r}, {list(seen.covers)!r}, {uid!r})\n")


def unshare_argv(unshare: str, uid: int | None) -> list[str]:
    """util-linux only: the namespace's pid 1 is a shell that only waits (so the answer is not an
    unkillable pid 1) for ``sandbox_init.py``, which builds the root, pivots into it, drops every
    privilege (to ``uid`` as root, with no user namespace; else every capability of its user
    namespace) and runs the child. The child's own arguments follow, its code at the head of its
    stdin (``run_argv``)."""
    user = [] if uid is not None else ["--user", "--map-root-user"]
    return [shutil.which("setpriv") or "setpriv", "--pdeathsig", "KILL", unshare, *user, "--pid", "--fork",
            "--kill-child=SIGKILL", "--mount", "--net", "--ipc", "--uts", "sh", "-c", '"$@"; exit $?', "sh",
            interpreter(), "-I", "-S", "-u", "-c", init_code(uid)]


def wrapper(kind: str, uid: int | None = None, seccomp_fd: int | None = None) -> tuple[str, ...]:
    """argv up to the child's own arguments: bwrap's before ``python -I -S -u -c CHILD_BOOT``, unshare's
    with its own interpreter, plain ``python ... CHILD_BOOT`` for the rlimit fallback. ``uid``: the
    unprivileged id a root grader drops the child to (None when not root); ``seccomp_fd``: bwrap's
    filter (``filter_fd``)."""
    if kind == "unshare":
        return tuple(unshare_argv(shutil.which("unshare") or "unshare", uid))
    boot = (interpreter(), "-I", "-S", "-u", "-c", CHILD_BOOT)
    if kind == "bwrap":
        return (*bwrap_argv(shutil.which("bwrap") or "bwrap", uid, seccomp_fd), *boot)
    return boot


def wrapper_env(kind: str) -> dict[str, str]:
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"} if kind == "unshare" else {}


@dataclass(frozen=True)
class Facts:
    """The sandbox seen from inside by the probe: what ``ddtune doctor`` reports."""

    uid: int
    no_capabilities: bool
    proc_sys_read_only: bool
    root_read_only: bool
    seccomp: str | None  # None: the filter took; else why not
    nested_userns_refused: bool


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


def run_argv(kind: str, seccomp_fd: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line up to the child's own arguments for one run, and its environment. The child's
    stdin must begin with ``child_code()``; ``seccomp_fd`` (bwrap): ``filter_fd``'s, passed to it."""
    uid = sandbox_uid() if as_root() and kind != "rlimit" else None
    return [*wrapper(kind, uid, seccomp_fd), str(len(child_code()))], wrapper_env(kind)


def _look(kind: str, paths: list[str]) -> dict | str:
    """What a child of ``kind`` sees from inside (sandbox_child.facts), ``paths`` among it, or why
    Python does not run inside it (one line)."""
    tools = {"bwrap": ["bwrap"] + (["setpriv"] if as_root() else []), "unshare": ["setpriv", "unshare"],
             "rlimit": []}[kind]
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    try:
        with filter_fd(kind) as seccomp_fd:
            argv, env = run_argv(kind, seccomp_fd)
            done = subprocess.run([*argv, "facts", child_filter(seccomp_fd), *paths], env=env,
                                  capture_output=True, timeout=20, input=child_code(), umask=0o022, cwd="/",
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
def facts(kind: str) -> Facts | str:
    """Facts of ``kind`` here, or why Python does not run inside it, or why it must not be used (one
    line). Cached per process. A namespace sandbox whose child finds ddtune's own files is refused."""
    seen = _look(kind, guarded())
    if isinstance(seen, str):
        return seen
    try:
        found = Facts(uid=int(seen["uid"]), no_capabilities=int(seen["cap_eff"], 16) == 0,
                      proc_sys_read_only=not seen["proc_sys_writable"], root_read_only=not seen["root_writable"],
                      seccomp=seen["seccomp"], nested_userns_refused=seen["unshare_user"] is False)
    except (ValueError, KeyError, TypeError):
        return f"cannot run Python inside it: it reported {str(seen)[:200]}"
    if kind != "rlimit" and seen["visible"]:
        return f"ddtune's own files are visible inside it ({seen['visible'][0]}): answers could read the hidden tests"
    return found


def hidden_tests(kind: str) -> Protection:
    """The proof ``ddtune doctor`` gives that answers cannot look the expected values up: canaries beside
    the hidden tests' file and beside ddtune's packages, and those files themselves, not found by a
    child of ``kind``."""
    with canaries() as (placed, refused):
        seen = _look(kind, placed + guarded())
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


def probe(kind: str) -> str | None:
    """None when Python runs inside ``kind`` here, else why not (one line)."""
    found = facts(kind)
    return found if isinstance(found, str) else None


def _describe(kind: str) -> str:
    who = "a fresh unprivileged uid" if as_root() else "your uid in a user namespace"
    if kind in ("bwrap", "unshare"):
        tool = "bubblewrap" if kind == "bwrap" else "unshare"
        return (f"{tool}: new PID, mount, network, IPC namespaces; answers run as {who}, no capabilities, "
                f"seccomp; only the interpreter and its stdlib, read-only; sized tmpfs cwd")
    return "rlimits, own session and a host temp dir only: the answer can read host files and signal ddtune"


def protections(kind: str) -> list[Protection]:
    """Each protection of ``kind`` as the probe saw it from inside."""
    from workloads.grading import sandbox_cgroup

    seen = facts(kind)
    if isinstance(seen, str):
        return [Protection("sandbox", False, seen)]
    ns = kind != "rlimit"
    who = (f"host uid {seen.uid}, a fresh one per answer" if as_root() and seen.uid != 0
           else f"uid {seen.uid}" + (" inside a user namespace" if ns and not as_root() else ""))
    found = [Protection("namespaces", ns, "PID, mount, network, IPC, UTS" if ns else "none: host files are visible"),
             Protection("unprivileged id", seen.uid != 0 or (ns and not as_root()), f"answers run as {who}"),
             Protection("no capabilities", seen.no_capabilities,
                        "every capability set empty" if seen.no_capabilities else "the answer keeps capabilities"),
             Protection("seccomp filter", seen.seccomp is None,
                        "no new namespaces, mounts, ptrace, keyring, bpf, SysV/POSIX shared memory, "
                        "sockets but unix and IP"
                        if seen.seccomp is None else str(seen.seccomp)),
             Protection("kernel knobs", seen.proc_sys_read_only,
                        "/proc/sys read-only" if seen.proc_sys_read_only else "/proc/sys is writable by the answer"),
             Protection("sized filesystems", ns and seen.root_read_only,
                        f"only the interpreter and its stdlib, read-only; /tmp a {TMPFS_BYTES >> 20} MiB tmpfs"
                        if ns else "the answer writes to a host temp dir"),
             hidden_tests(kind)]
    why = sandbox_cgroup.unavailable() if ns else "no namespace to count"
    cpu = sandbox_cgroup.cpu_cap_unavailable() if why is None else why
    held = ("a cgroup caps memory (shared memory included), processes" + (" and CPU" if cpu is None else "")
            + " of the whole answer" + ("" if cpu is None else f"; a watchdog sums its CPU time ({cpu})"))
    found.append(Protection("whole-answer limits", True if why is None else None, held if why is None else
                            f"a watchdog sums the answer's memory and CPU time and counts processes ({why})"))
    return found


def isolation() -> Isolation:
    """The sandbox this process grades in: ``DDTUNE_SANDBOX`` when set, else the strongest that works."""
    forced = os.environ.get("DDTUNE_SANDBOX", "").strip()
    if forced:
        if forced not in KINDS:
            raise ConfigError(f"DDTUNE_SANDBOX={forced}: unknown sandbox",
                              hint="use bwrap, unshare or rlimit, or unset it to use the strongest that works")
        why = probe(forced)
        if why is not None:
            raise ConfigError(f"DDTUNE_SANDBOX={forced}: {forced} {why}",
                              hint="install bubblewrap (apt-get install bubblewrap) or unset DDTUNE_SANDBOX")
        return Isolation(forced, _describe(forced))
    reasons = []
    for kind in ("bwrap", "unshare"):
        why = probe(kind)
        if why is None:
            return Isolation(kind, _describe(kind))
        reasons.append(f"{kind}: {why}")
    return Isolation("rlimit", f"{_describe('rlimit')} ({'; '.join(reasons)})")


def warn_if_weak(found: Isolation) -> None:
    """Say once per process, on stderr, that grading is weakly isolated."""
    global _warned
    with _lock:
        if found.kind != "rlimit" or _warned:
            return
        _warned = True
    sys.stderr.write(f"ddtune: warning: grading is weakly isolated ({found.detail}); "
                     f"install bubblewrap to sandbox generated code\n")
    sys.stderr.flush()


def make_workdir() -> str:
    """A host working directory for the rlimit fallback; its name holds our PID namespace, pid and
    token (sandbox_owner) so a later run can prove it stale (``sweep_stale``) when this process is
    killed before removing it."""
    return tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{sandbox_owner.tag()}-")


def sweep_stale(root: str | None = None, legacy_age_s: float = 3600.0) -> int:
    """Remove our ``ddtune-sandbox-<tag>-*`` dirs whose maker is gone (never those of a grader in
    another PID namespace: sandbox_owner.stale), and untagged ones from earlier versions after an
    hour. Returns how many went."""
    base = Path(root or tempfile.gettempdir())
    removed = 0
    try:
        entries = list(base.glob(f"{TEMP_PREFIX}*"))
    except OSError:
        return 0
    for path in entries:
        try:
            info = path.lstat()
        except OSError:
            continue
        if not path.is_dir() or path.is_symlink() or info.st_uid != os.geteuid():
            continue
        if re.match(rf"{TEMP_PREFIX}{sandbox_owner.PATTERN}-", path.name):
            stale = sandbox_owner.stale(path.name, TEMP_PREFIX)
        else:
            stale = time.time() - info.st_mtime > legacy_age_s
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


@functools.cache
def sweep_once() -> int:
    """``sweep_stale`` in the temp dir, the first time this process grades."""
    return sweep_stale()


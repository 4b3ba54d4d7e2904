"""Which OS boundary the grading sandbox can build here, and the command line that builds it.

Strongest first: ``bwrap`` (bubblewrap) or ``unshare`` (util-linux) give the child new user, PID,
mount, network, IPC and UTS namespaces over a root that holds only the interpreter, /usr and /lib*
(read-only, site-packages hidden), a fresh /proc of its own PID namespace, a few /dev nodes and a
size-capped tmpfs as /tmp and working directory. ``rlimit`` is the fallback where no namespace can
be made: resource limits, its own session and a host temporary directory, with an audit hook as a
tripwire; it is weak (the answer can read host files and signal this process) and ddtune says so.
Each kind is probed once per process by running Python inside it; ``DDTUNE_SANDBOX=bwrap|unshare|rlimit``
forces one (tests use it to cover every mode).
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
import site
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from backends.core.errors import ConfigError
from backends.core.paths import package_dirs, problems_file
from workloads.grading import sandbox_owner
from workloads.grading.sandbox_seccomp import child_filter, filter_fd

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
    """The real interpreter behind this one (a venv's python links to it; a venv is not mounted)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _roots() -> list[str]:
    """Read-only views: /usr, the interpreter's installation, /lib* that are real directories."""
    exe = interpreter()
    wanted = ["/usr", sys.base_prefix, sys.base_exec_prefix, os.path.dirname(exe)]
    wanted += [f"/{d}" for d in ("lib", "lib64", "lib32", "libx32", "bin", "sbin") if not os.path.islink(f"/{d}")]
    roots: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted if os.path.isdir(p)}):
        if not any(path == r or path.startswith(r + os.sep) for r in roots):
            roots.append(path)
    return roots


def _hidden(roots: list[str]) -> list[str]:
    """Directories under the roots to cover with an empty tmpfs: installed packages, and ddtune's own
    package folders wherever they are imported from (a checkout under /usr/local/src, say): its code
    and the presets, whose problems/coding.toml holds the hidden tests' expected answers."""
    dirs = site.getsitepackages([sys.base_prefix, sys.base_exec_prefix]) + [str(d) for d in package_dirs()]
    return sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)
                   and any(os.path.realpath(d).startswith(r + os.sep) for r in roots)})


def _ancestors(roots: list[str]) -> list[str]:
    """The folders above the roots, outermost first, that the sandbox's / must have."""
    found: set[str] = set()
    for root in roots:
        parent = os.path.dirname(root)
        while parent not in ("/", ""):
            found.add(parent)
            parent = os.path.dirname(parent)
    return sorted(found, key=lambda p: (p.count("/"), p))


def _links() -> list[tuple[str, str]]:
    return [(os.readlink(f"/{d}"), f"/{d}") for d in ("lib", "lib64", "lib32", "libx32", "bin", "sbin")
            if os.path.islink(f"/{d}")]


@functools.cache
def _layout() -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(roots, their ancestors, /lib-style links, hidden folders): the sandbox's view of this host,
    the same for every answer this process grades (realpaths and site lookups, worked out once)."""
    roots = _roots()
    return tuple(roots), tuple(_ancestors(roots)), tuple(_links()), tuple(_hidden(roots))


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
    roots, ancestors, links, hidden = _layout()
    # the answer's /tmp first, so that a root below /tmp is bound over it, not hidden under it
    argv += ["--size", str(TMPFS_BYTES), "--perms", "1777", "--tmpfs", "/tmp"]
    for parent in ancestors:  # made 0755: bwrap copies a parent's mode, and /root is 0700
        argv += ["--perms", "0755", "--dir", parent]
    for root in roots:
        argv += ["--ro-bind", root, root]
    for target, link in links:
        argv += ["--symlink", target, link]
    for path in hidden:
        argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--"]
    return argv + (_drop(uid) if uid is not None else [])


def init_code(uid: int | None) -> str:
    """The unshare sandbox's pid 1 (sandbox_init.py) with this host's layout and the run's ``uid``:
    the program its ``-c`` runs."""
    roots, _, links, hidden = _layout()
    return f"{INIT_SOURCE}\nmain({TMPFS_BYTES!r}, {list(roots)!r}, {list(links)!r}, {list(hidden)!r}, {uid!r})\n"


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


def _secret() -> str:
    """What the probe must not find inside a namespace sandbox: the hidden tests' answers. A file
    inside one of the covered folders (a covered folder itself still exists, empty)."""
    return str(problems_file())


@functools.cache
def facts(kind: str) -> Facts | str:
    """Facts of ``kind`` here, or why Python does not run inside it (one line). Cached per process."""
    tools = {"bwrap": ["bwrap"] + (["setpriv"] if as_root() else []), "unshare": ["setpriv", "unshare"],
             "rlimit": []}[kind]
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    try:
        with filter_fd(kind) as seccomp_fd:
            argv, env = run_argv(kind, seccomp_fd)
            done = subprocess.run([*argv, "facts", child_filter(seccomp_fd), _secret()], env=env,
                                  capture_output=True, timeout=20, input=child_code(), umask=0o022, cwd="/",
                                  pass_fds=() if seccomp_fd is None else (seccomp_fd,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run it: {exc}"
    stdout, stderr = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    try:
        seen = json.loads(stdout.strip().splitlines()[-1])
        found = Facts(uid=int(seen["uid"]), no_capabilities=int(seen["cap_eff"], 16) == 0,
                      proc_sys_read_only=not seen["proc_sys_writable"], root_read_only=not seen["root_writable"],
                      seccomp=seen["seccomp"], nested_userns_refused=seen["unshare_user"] is False)
        if kind != "rlimit" and seen["own_files_visible"]:
            return f"ddtune's own files ({_secret()}, the hidden tests' answers) are visible inside it"
    except (ValueError, KeyError, IndexError, TypeError):
        why = (stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"cannot run Python inside it: {why[:200]}"
    return found


def probe(kind: str) -> str | None:
    """None when Python runs inside ``kind`` here, else why not (one line)."""
    found = facts(kind)
    return found if isinstance(found, str) else None


def _describe(kind: str) -> str:
    who = "a fresh unprivileged uid" if as_root() else "your uid in a user namespace"
    if kind in ("bwrap", "unshare"):
        tool = "bubblewrap" if kind == "bwrap" else "unshare"
        return (f"{tool}: new PID, mount, network, IPC namespaces; answers run as {who}, no capabilities, "
                f"seccomp; read-only interpreter; sized tmpfs cwd")
    return "rlimits, own session and a host temp dir only: the answer can read host files and signal ddtune"


@dataclass(frozen=True)
class Protection:
    """One layer of the grading sandbox as ``ddtune doctor`` reports it: active, missing (False),
    or a weaker stand-in (None)."""

    name: str
    active: bool | None
    detail: str


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
                        "no new namespaces, mounts, ptrace, keyring, bpf, SysV/POSIX shared memory"
                        if seen.seccomp is None else str(seen.seccomp)),
             Protection("kernel knobs", seen.proc_sys_read_only,
                        "/proc/sys read-only" if seen.proc_sys_read_only else "/proc/sys is writable by the answer"),
             Protection("sized filesystems", ns and seen.root_read_only,
                        f"/ and /dev read-only, /tmp a {TMPFS_BYTES >> 20} MiB tmpfs" if ns
                        else "the answer writes to a host temp dir")]
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


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
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from backends.errors import ConfigError
from backends.paths import PRESETS_DIR

KINDS = ("bwrap", "unshare", "rlimit")
TMPFS_BYTES = 64 << 20
CHILD_SOURCE = Path(__file__).with_name("sandbox_child.py").read_text(encoding="utf-8")
TEMP_PREFIX = "ddtune-sandbox-"
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
    """Directories under the roots to cover with an empty tmpfs: installed packages (ddtune's own
    presets, with the expected answers, may be among them)."""
    dirs = site.getsitepackages([sys.base_prefix, sys.base_exec_prefix]) + [str(PRESETS_DIR)]
    return sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)
                   and any(os.path.realpath(d).startswith(r + os.sep) for r in roots)})


def _links() -> list[tuple[str, str]]:
    return [(os.readlink(f"/{d}"), f"/{d}") for d in ("lib", "lib64", "lib32", "libx32", "bin", "sbin")
            if os.path.islink(f"/{d}")]


def bwrap_argv(bwrap: str) -> list[str]:
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv"]
    roots = _roots()
    for root in roots:
        argv += ["--ro-bind", root, root]
    for target, link in _links():
        argv += ["--symlink", target, link]
    for path in _hidden(roots):
        argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return argv + ["--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp",
                   "--chdir", "/tmp"]


def unshare_argv(setpriv: str, unshare: str) -> list[str]:
    """util-linux only: the namespace's pid 1 is a shell that builds the root, pivots into it, drops
    every capability and runs the child (never exec'd, so the child is not an unkillable pid 1)."""
    roots = _roots()
    q = shlex.quote
    lines = ["set -eu", f"mount -t tmpfs -o size={TMPFS_BYTES},mode=755,nosuid,nodev tmpfs /tmp", "cd /tmp",
             "mkdir -p proc dev tmp old"]
    for root in roots:
        lines += [f"mkdir -p .{q(root)}", f"mount --bind -o ro,nosuid,nodev {q(root)} .{q(root)}"]
    for target, link in _links():
        lines.append(f"ln -s {q(target)} .{q(link)}")
    for path in _hidden(roots):
        lines.append(f"mount -t tmpfs -o size=4k,ro,nosuid,nodev tmpfs .{q(path)}")
    for node in ("null", "zero", "random", "urandom"):
        lines += [f"touch dev/{node}", f"mount --bind /dev/{node} dev/{node}"]
    lines += ["mount -t proc -o nosuid,nodev,noexec proc proc",
              f"mount -t tmpfs -o size={TMPFS_BYTES},nosuid,nodev tmpfs tmp",
              "pivot_root . old", "umount -l /old", "rmdir /old", "cd /tmp", "set +e",
              'setpriv --no-new-privs --inh-caps=-all --bounding-set=-all -- env -i "$@"', "exit $?"]
    return [setpriv, "--pdeathsig", "KILL", unshare, "--user", "--map-root-user", "--pid", "--fork",
            "--kill-child=SIGKILL", "--mount", "--net", "--ipc", "--uts", "sh", "-c", "\n".join(lines), "sh"]


@functools.cache
def wrapper(kind: str) -> tuple[str, ...]:
    """argv that goes before ``python -I -S ...``; empty for the rlimit fallback."""
    if kind == "bwrap":
        return tuple(bwrap_argv(shutil.which("bwrap") or "bwrap"))
    if kind == "unshare":
        return tuple(unshare_argv(shutil.which("setpriv") or "setpriv", shutil.which("unshare") or "unshare"))
    return ()


def wrapper_env(kind: str) -> dict[str, str]:
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"} if kind == "unshare" else {}


@functools.cache
def probe(kind: str) -> str | None:
    """None when Python runs inside ``kind`` here, else why not (one line). Cached per process."""
    if kind == "rlimit":
        return None
    tools = ["bwrap"] if kind == "bwrap" else ["setpriv", "unshare"]
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    hidden = os.path.dirname(os.path.abspath(__file__))  # must not be visible inside
    code = f"import os; print('ok', not os.path.exists({hidden!r}))"
    try:
        done = subprocess.run([*wrapper(kind), interpreter(), "-I", "-S", "-c", code], env=wrapper_env(kind),
                              capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run it: {exc}"
    if done.returncode != 0 or done.stdout.split() != ["ok", "True"]:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"cannot run Python inside it: {why[:200]}"
    return None


def _describe(kind: str) -> str:
    if kind == "bwrap":
        return "bubblewrap: new user, PID, mount, network, IPC namespaces; read-only interpreter; tmpfs cwd"
    if kind == "unshare":
        return "unshare: new user, PID, mount, network, IPC namespaces; read-only interpreter; tmpfs cwd"
    return "rlimits, own session and a host temp dir only: the answer can read host files and signal ddtune"


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
    """A host working directory for the rlimit fallback; its name holds our pid so a later run can
    prove it stale (``sweep_stale``) when this process is killed before removing it."""
    return tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-")


def sweep_stale(root: str | None = None, legacy_age_s: float = 3600.0) -> int:
    """Remove our ``ddtune-sandbox-<pid>-*`` dirs whose pid is dead (and old
    pid-less ones from earlier versions, after an hour). Returns how many went."""
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
        match = re.fullmatch(rf"{TEMP_PREFIX}(\d+)-\w+", path.name)
        if match:
            stale = not _pid_alive(int(match.group(1)))
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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

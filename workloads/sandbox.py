"""Run untrusted generated code against hidden tests in a separate, limited ``python -I`` process.

Layers, outermost first:
- a new session (its own process group), killed as a whole on timeout and after every run, with a
  watchdog that kills the group when it holds more than ``max_procs`` live processes (root ignores
  RLIMIT_NPROC, so this is what stops a fork bomb there);
- resource limits set by the harness on itself before the code runs: CPU seconds, address space,
  file size, open files, no core dumps, RLIMIT_NPROC (effective for non-root users);
- a wall-clock timeout; a fresh temporary working directory, removed afterwards; an environment
  with nothing of the caller's (no tokens, no keys, no PYTHON* variables);
- an audit hook in the harness that refuses process creation, signals, sockets, ctypes and any
  write outside the working directory (on by default; tests switch it off to prove the OS layer).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HARNESS = r'''
import json, os, resource, sys
task = json.load(open("task.json"))
result = open("verdict.json", "w")
limits = task["limits"]
def setlimit(which, value, slack=0):
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and value + slack > hard:
            value, slack = hard, 0
        resource.setrlimit(which, (value, value + slack))
    except (ValueError, OSError):
        pass
setlimit(resource.RLIMIT_CPU, limits["cpu_s"], 1)  # SIGXCPU at the soft limit
setlimit(resource.RLIMIT_AS, limits["memory_bytes"])
setlimit(resource.RLIMIT_FSIZE, limits["file_bytes"])
setlimit(resource.RLIMIT_NOFILE, limits["open_files"])
setlimit(resource.RLIMIT_CORE, 0)
if limits.get("nproc"):
    setlimit(resource.RLIMIT_NPROC, limits["nproc"])
ROOT = os.path.realpath(os.getcwd())
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
DENY = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
        "os.kill", "os.killpg", "signal.pthread_kill", "socket.connect", "socket.bind", "socket.sendto",
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.setuid", "os.setsid"}
PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
               "os.symlink", "os.truncate", "shutil.rmtree", "os.utime", "shutil.move", "os.replace"}
def inside(path):
    if isinstance(path, int):
        return True
    try:
        real = os.path.realpath(os.fsdecode(path))
    except Exception:
        return False
    return real == ROOT or real.startswith(ROOT + os.sep)
def hook(event, args):
    if event in DENY:
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & WRITE)
        if writing and not inside(path):
            raise PermissionError(f"sandbox: writing {path!r} outside the working directory is not allowed")
    elif event in PATH_EVENTS:
        for arg in args:
            if isinstance(arg, (str, bytes, os.PathLike)) and not inside(arg):
                raise PermissionError(f"sandbox: {event} on {arg!r} outside the working directory is not allowed")
if task["audit"]:
    sys.addaudithook(hook)
def finish(verdict, detail):
    result.write(json.dumps({"verdict": verdict, "detail": detail}))
    result.flush()
    os._exit(0)
def describe(exc):
    return f"{type(exc).__name__}: {exc}"[:500]
try:
    code = compile(task["code"], "<answer>", "exec")
except BaseException as exc:
    finish("error", describe(exc))
ns = {"__name__": "__answer__"}
try:
    exec(code, ns)
except BaseException as exc:
    finish("error", "while defining the answer: " + describe(exc))
if not callable(ns.get(task["function"])):
    finish("error", f"the answer does not define function {task['function']!r}")
passed = 0
for n, test in enumerate(task["tests"], 1):
    try:
        ok = eval(test, ns) is True
    except BaseException as exc:
        finish("error", f"test {n} raised {describe(exc)}: {test}")
    if not ok:
        finish("fail", f"test {n} of {len(task['tests'])} failed: {test}")
    passed += 1
finish("pass", f"{passed}/{len(task['tests'])} tests passed")
'''


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 10.0
    cpu_s: int = 5
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20
    open_files: int = 64
    max_procs: int = 16


@dataclass(frozen=True)
class SandboxResult:
    """``verdict`` is pass, fail, error or timeout."""

    verdict: str
    detail: str
    output: str
    elapsed_s: float


def clean_env(workdir: str) -> dict[str, str]:
    """Only what Python needs; none of the caller's variables (API keys, tokens) travel."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir}


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc."""
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def kill_group(pgid: int, deadline_s: float = 3.0) -> None:
    """SIGKILL the whole group until nothing live is left in it (bounded)."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if not group_members(pgid) or time.monotonic() > end:
            return
        time.sleep(0.01)


def _nproc_limit(extra: int) -> int | None:
    if os.geteuid() == 0:
        return None  # ignored for root; the watchdog covers it
    uid = os.geteuid()
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count + extra


def run_tests(code: str, function: str, tests: tuple[str, ...] | list[str],
              limits: SandboxLimits = SandboxLimits(), audit: bool = True) -> SandboxResult:
    """Blocking: run ``code`` then each test expression. Call it through a thread from async code."""
    workdir = tempfile.mkdtemp(prefix="ddtune-sandbox-")
    start = time.monotonic()
    try:
        task = {"code": code, "function": function, "tests": list(tests), "audit": audit,
                "limits": {"cpu_s": limits.cpu_s, "memory_bytes": limits.memory_bytes,
                           "file_bytes": limits.file_bytes, "open_files": limits.open_files,
                           "nproc": _nproc_limit(limits.max_procs)}}
        Path(workdir, "task.json").write_text(json.dumps(task), encoding="utf-8")
        Path(workdir, "harness.py").write_text(HARNESS, encoding="utf-8")
        with open(os.path.join(workdir, "output.txt"), "wb") as out:
            proc = subprocess.Popen([sys.executable, "-I", "harness.py"], cwd=workdir, env=clean_env(workdir),
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True)
        verdict = detail = None
        polls = 0
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            if elapsed > limits.wall_s:
                verdict, detail = "timeout", f"still running after {limits.wall_s:g} s wall clock"
                break
            polls += 1
            if polls % 5 == 0 and len(group_members(proc.pid)) > limits.max_procs:
                verdict, detail = "error", f"sandbox: more than {limits.max_procs} processes (fork bomb?)"
                break
            time.sleep(0.01 if elapsed < 0.5 else 0.03)
        kill_group(proc.pid)
        proc.wait()
        output = _tail(os.path.join(workdir, "output.txt"))
        if verdict is None:
            verdict, detail = _read_verdict(workdir, proc.returncode, output)
        return SandboxResult(verdict, detail, output, time.monotonic() - start)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _tail(path: str, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_verdict(workdir: str, returncode: int, output: str) -> tuple[str, str]:
    try:
        data = json.loads(Path(workdir, "verdict.json").read_text(encoding="utf-8"))
        return str(data["verdict"]), str(data["detail"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if returncode == -signal.SIGXCPU:
        return "timeout", "CPU time limit exceeded"
    if returncode < 0:
        return "error", f"sandbox process killed by signal {signal.Signals(-returncode).name}"
    last = output.strip().splitlines()[-1:] or [""]
    return "error", f"sandbox process exited {returncode} without a verdict {last[0][:200]}".strip()

"""Run untrusted generated code in a sandbox; judge its results here, where the answers are.

Layers, outermost first:
- trusted-side judging: each hidden test is ``CALL == VALUE`` (workloads/grading/checks.py). The child gets
  only the CALLs, evaluates them and writes each result as plain-data JSON to a dedicated pipe; this
  process decodes it (exact builtin types only, in work bounded by VALUE: workloads/grading/sandbox_wire.py)
  and compares it with VALUE, which the child never sees. Nothing the child prints or writes to a file
  is a verdict; an object that is not plain data is a ``fail``; a lying child can only pass by
  guessing VALUE;
- an OS boundary, bubblewrap (workloads/grading/sandbox_isolation.py): new PID, mount, network, IPC
  and UTS namespaces; of the host's files only the interpreter, its libraries and its stdlib,
  read-only (an allow-list, workloads/grading/sandbox_view.py: nothing of ddtune, no site-packages),
  no network, a fresh /proc, an empty environment, a sized tmpfs as working directory, and no host
  directory to clean up. As root the child runs as a fresh unprivileged uid; as a user, in a user
  namespace. It holds no capability and runs under a seccomp filter
  (workloads/grading/sandbox_seccomp.py) that bwrap installs before the interpreter starts. The
  namespace's pid 1 is SIGKILLed after every run, so nothing it started (a ``setsid`` double fork
  included) outlives the run; ``--die-with-parent`` covers ddtune dying. Without bubblewrap ddtune
  refuses to grade (``ConfigError``): it never runs model code outside it;
- limits for the whole answer: a cgroup (workloads/grading/sandbox_cgroup.py) caps the memory, the
  processes and the CPU (``cpus`` CPUs at most) of all the answer's processes where one can be had;
  else the watchdog below sums the namespace's resident memory and counts its processes. Either way
  the watchdog ends an answer whose processes together used more than ``cpu_s`` of CPU (the cgroup's
  count, else the sum over the namespace's processes), as RLIMIT_CPU does for one process;
- resource limits the child sets on itself before the answer runs: CPU seconds, address space, file
  size, open files, no core dumps (a root grader's fresh uid: RLIMIT_NPROC); a wall-clock timeout;
  a watchdog that stops the run when it holds more than ``max_procs`` live processes.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import selectors
import subprocess
import time
from dataclasses import dataclass

from backends.core import plain
from workloads.grading.checks import Check, parse_test
from workloads.grading import sandbox_cgroup
from workloads.grading.sandbox_judge import judge, signal_of
from workloads.grading.sandbox_isolation import Isolation, Protection, as_root, child_code, isolation, protections, \
    run_argv
from workloads.grading.sandbox_seccomp import filter_fd
from workloads.grading.sandbox_watch import Namespace, cpu, rss

__all__ = ["Isolation", "Protection", "SandboxLimits", "SandboxResult", "isolation", "protections", "run_tests"]
MAX_RESULT_BYTES = 8 << 20
WRAPPER_PROCS = 4  # the cgroup also holds the wrapper: bwrap's monitor and the namespace's pid 1, with room
WRAPPER_BYTES = 64 << 20  # and their memory, beside the answer's own limit
OUTPUT_TAIL = 4096
WATCH_S = 0.05  # how often the watchdog counts the answer's processes (and, without a cgroup, its memory)


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 10.0
    cpu_s: int = 5
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20
    open_files: int = 64
    max_procs: int = 16
    cpus: float = 1.0  # the answer's processes together run on at most this many CPUs, where a cgroup holds


@dataclass(frozen=True)
class SandboxResult:
    """``verdict`` is pass, fail, error or timeout; ``output`` the tail of what the code printed."""

    verdict: str
    detail: str
    output: str
    elapsed_s: float


def run_tests(code: str, function: str, tests: tuple[str, ...] | list[str],
              limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Blocking: run ``code``, compute each test's call in the sandbox, judge here. Call it through
    a thread from async code. Raises ``ValueError`` for a test not of the form CALL == VALUE and
    ``ConfigError`` where bubblewrap cannot run here (ddtune grades nothing outside it)."""
    checks = [parse_test(test, function) for test in tests]
    isolation()
    start = time.monotonic()
    with filter_fd() as seccomp_fd:
        task = {"code": code, "function": function, "calls": [c.call for c in checks],
                "seccomp": seccomp_fd is not None,
                "limits": {"cpu_s": limits.cpu_s, "memory_bytes": limits.memory_bytes,
                           "file_bytes": limits.file_bytes, "open_files": limits.open_files,
                           "nproc": _fresh_nproc(limits)}}
        group = _cgroup(limits)
        try:
            return _supervise(child_code() + marshal.dumps(task), checks, limits, group, start, seccomp_fd)
        finally:
            if group is not None:
                sandbox_cgroup.remove(group)


def _fresh_nproc(limits: SandboxLimits) -> int | None:
    """A root grader's uid is fresh, so RLIMIT_NPROC counts the answer alone; where a cgroup holds,
    it sits above the cgroup's limit, whose refusals the kernel counts (and the verdict names)."""
    if not as_root():
        return None
    return limits.max_procs + 1 + (WRAPPER_PROCS + 1 if sandbox_cgroup.unavailable() is None else 0)


def _cgroup(limits: SandboxLimits) -> sandbox_cgroup.Cgroup | None:
    """The whole answer's cgroup, where one can be had (else the watchdog holds the totals)."""
    if sandbox_cgroup.unavailable() is not None:
        return None
    try:
        return sandbox_cgroup.create(limits.memory_bytes + WRAPPER_BYTES, limits.max_procs + WRAPPER_PROCS,
                                     limits.cpus)
    except OSError:
        return None


def _cpu_used(group: sandbox_cgroup.Cgroup | None, pids: list[int]) -> float:
    counted = sandbox_cgroup.cpu_seconds(group) if group is not None else None
    return counted if counted is not None else cpu(pids)


def _supervise(task: bytes, checks: list[Check], limits: SandboxLimits, group: sandbox_cgroup.Cgroup | None,
               start: float, seccomp_fd: int | None) -> SandboxResult:
    stdin_r, stdin_w = os.pipe()
    results_r, results_w = os.pipe()
    try:
        os.set_blocking(stdin_w, False)
        try:  # the whole task goes into the pipe before the child starts: it reads it all first
            if len(task) > 4096:
                fcntl.fcntl(stdin_w, fcntl.F_SETPIPE_SZ, len(task))
            written = os.write(stdin_w, task)
        except OSError:
            written = 0
        if written != len(task):
            os.close(results_r)
            return SandboxResult("error", f"the answer is too large to grade ({len(task)} bytes)", "",
                                 time.monotonic() - start)
        argv = [*(sandbox_cgroup.enter_argv(group) if group else []), *run_argv(seccomp_fd), str(results_w)]
        passed = (results_w,) if seccomp_fd is None else (results_w, seccomp_fd)
        try:
            proc = subprocess.Popen(argv, cwd="/", stdin=stdin_r, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    pass_fds=passed, start_new_session=True, env={}, umask=0o022)
        except OSError:
            os.close(results_r)
            raise
    finally:
        for fd in (stdin_r, stdin_w, results_w):
            os.close(fd)
    assert proc.stdout is not None
    out, results = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    for fd, sink in ((proc.stdout.fileno(), (out, True)), (results_r, (results, False))):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, sink)
    ns = Namespace(proc.pid)
    exited = os.pidfd_open(proc.pid)  # readable once the wrapper has exited: the wait ends then, not at a poll
    sel.register(exited, selectors.EVENT_READ, None)
    stopped: tuple[str, str] | None = None
    peak = 0
    watch_at = 0.0  # the watchdog's next look: every WATCH_S for the first half second, then every 3 WATCH_S
    try:
        while proc.poll() is None:
            now = time.monotonic()
            elapsed = now - start
            if elapsed > limits.wall_s:
                stopped = "timeout", f"still running after {limits.wall_s:g} s wall clock"
                break
            if len(results) > MAX_RESULT_BYTES:
                stopped = "error", f"sandbox: the answer sent more than {MAX_RESULT_BYTES >> 20} MiB of results"
                break
            if not ns.find():
                time.sleep(0.001)  # pid 1 appears within milliseconds; hold it before the answer runs
                continue
            if now >= watch_at:
                watch_at = now + (WATCH_S if elapsed < 0.5 else 3 * WATCH_S)
                among = sandbox_cgroup.processes(group) if group is not None else None
                found = ns.members(among)
                members = found[1:]  # the namespace's pid 1 is bwrap's
                peak = max(peak, len(members))
                if len(members) > limits.max_procs:
                    stopped = "error", _too_many_processes(limits)
                    break
                if group is None and rss(members) > limits.memory_bytes:
                    stopped = "error", _too_much_memory(limits)
                    break
                if _cpu_used(group, found) > limits.cpu_s:
                    stopped = "timeout", _too_much_cpu(limits)
                    break
            # Sleep until output, the exit or the watchdog's next look: an answer's run wakes this
            # thread about ten times, where a fixed 10 ms poll woke it sixty (its CPU, per answer).
            for key, _ in sel.select(max(0.0, min(watch_at, start + limits.wall_s) - time.monotonic())):
                if key.data is not None and _drain(key.fd, key.data):
                    sel.unregister(key.fd)  # at its end a pipe is always "readable": no spinning on it
    finally:
        ns.kill()  # and wait until the namespace is empty
        proc.kill()  # bwrap's monitor, if the namespace's end has not ended it yet
        proc.wait()
        sel.unregister(exited)
        os.close(exited)
        for key in list(sel.get_map().values()):
            _drain(key.fd, key.data)
        sel.close()
        proc.stdout.close()
        os.close(results_r)
    output = plain(bytes(out[-OUTPUT_TAIL:]).decode("utf-8", "replace"))  # what model code printed: untrusted
    verdict, detail = judge(checks, bytes(results[:MAX_RESULT_BYTES]), stopped,
                            signal_of(proc.returncode), proc.returncode, output)
    if stopped is not None and verdict == "error":  # the watchdog's reason beats what a dying answer said
        verdict, detail = stopped
    if group is not None and stopped is None:  # a limit of the whole answer, held by the kernel, wins
        if sandbox_cgroup.memory_exceeded(group):
            verdict, detail = "error", _too_much_memory(limits)
        elif sandbox_cgroup.procs_exceeded(group):
            verdict, detail = "error", _too_many_processes(limits)
        elif verdict != "fail" and (sandbox_cgroup.cpu_seconds(group) or 0.0) > limits.cpu_s:
            # time ran out after a test had failed: that failure, the first, stays the verdict
            verdict, detail = "timeout", _too_much_cpu(limits)
    if verdict == "error" and stopped is None and peak >= limits.max_procs:  # RLIMIT_NPROC refused a fork
        detail = f"{_too_many_processes(limits)}: {detail}"
    return SandboxResult(verdict, detail, output, time.monotonic() - start)


def _too_many_processes(limits: SandboxLimits) -> str:
    return f"sandbox: more than {limits.max_procs} processes (fork bomb?)"


def _too_much_cpu(limits: SandboxLimits) -> str:
    return f"sandbox: the answer's processes together used more than {limits.cpu_s} s of CPU"


def _too_much_memory(limits: SandboxLimits) -> str:
    return f"sandbox: the answer's processes together used more than {limits.memory_bytes >> 20} MiB of memory"


def _drain(fd: int, sink: tuple[bytearray, bool]) -> bool:
    """Read what is there without blocking; stdout keeps only its tail, results stop past the cap.
    True at the end of the pipe (every writer gone: nothing more will come)."""
    buf, tail_only = sink
    while len(buf) <= MAX_RESULT_BYTES:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # BlockingIOError included: nothing more for now
            return False
        if not chunk:
            return True
        buf += chunk
        if tail_only and len(buf) > OUTPUT_TAIL:
            del buf[:-OUTPUT_TAIL]
    return False  # past the cap: the caller stops the run

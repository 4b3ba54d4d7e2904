"""Hostile answers that broke the sandbox when ddtune ran as root (issue 19), each run for real in
bubblewrap. The tests run as root (CI and the README's command do); each attack's answer
reports what it managed, and the test asks the host as well. ``DDTUNE_SANDBOX_CGROUP=off`` covers
the watchdog that stands in where no cgroup can be had."""

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from backends.core.paths import problems_file
from tests.workloads.sandbox_support import token, wait_until
from workloads.grading import sandbox_cgroup, sandbox_owner
from workloads.grading.sandbox import SandboxLimits, run_tests
from workloads.grading.sandbox_isolation import facts, protections

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="these attacks are the root grader's")

LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"


@pytest.fixture(params=["cgroup", "watchdog"])
def whole_answer(request, monkeypatch):
    monkeypatch.setenv("DDTUNE_SANDBOX_CGROUP", "on" if request.param == "cgroup" else "off")
    return request.param


def grade(code: str, expected: object, **limits) -> tuple[str, str]:
    result = run_tests(code + "\ndef f():\n    return got", "f", [f"f() == {expected!r}"],
                       SandboxLimits(wall_s=20, **limits))
    return result.verdict, result.detail


def test_the_child_holds_no_capability_nor_host_uid_0():
    code = ("status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
            "import os\ngot = [os.getuid() != 0] + [int(status[k], 16) for k in ('CapPrm', 'CapEff', 'CapBnd')]")
    assert grade(code, [True, 0, 0, 0]) == ("pass", "1/1 tests passed")
    seen = facts()
    assert not isinstance(seen, str) and seen.uid != 0 and seen.no_capabilities and seen.seccomp is None


def test_remounting_the_interpreter_and_usr_read_write_fails():
    tok = token()
    targets = [os.path.join(sys.base_prefix, tok), f"/usr/{tok}"]
    code = LIBC + f"""
got = []
for where in ({sys.base_prefix!r}, "/usr", "/"):
    got.append(libc.mount(b"none", where.encode(), None, 0x20 | 0x1000, None))  # MS_REMOUNT | MS_BIND
for path in {targets!r}:
    try:
        open(path, "w").write("x")
        got.append("wrote " + path)
    except OSError:
        pass
"""
    try:
        assert grade(code, [-1, -1, -1])[0] == "pass"
        assert [p for p in targets if os.path.exists(p)] == []
    finally:
        for path in targets:
            if os.path.exists(path):
                os.remove(path)


def test_host_sysctls_and_core_pattern_do_not_open_for_writing():
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    code = """
got = []
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname", "/proc/sys/vm/overcommit_memory",
             "/proc/sysrq-trigger"):
    try:
        with open(path, "w") as fh:
            fh.write("|/tmp/pwn")
        got.append(path)
    except OSError:
        pass
"""
    assert grade(code, []) == ("pass", "1/1 tests passed")
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


def test_the_cover_over_site_packages_cannot_be_lifted_and_the_answers_stay_hidden():
    answers = [str(problems_file())] + [os.path.join(d, "presets", "problems", "coding.toml")
                                        for d in site.getsitepackages()]
    assert os.path.exists(answers[0])
    code = LIBC + f"""
import glob, os, sys
got = []
for d in glob.glob(sys.base_prefix + "/lib/python3*/site-packages") + glob.glob("/usr/lib/python3*/*-packages"):
    got.append(libc.umount2(d.encode(), 2))  # MNT_DETACH
got = [x for x in got if x != -1] + [p for p in {answers!r} if os.path.exists(p)]
"""
    assert grade(code, []) == ("pass", "1/1 tests passed")


def test_no_new_namespace_of_any_kind():
    # a nested PID namespace hid a fork bomb from the watchdog; a user namespace regains capabilities
    flags = {"user": 0x10000000, "pid": 0x20000000, "mount": 0x00020000, "net": 0x40000000, "ipc": 0x08000000}
    code = LIBC + f"""
import os
got = [libc.unshare(flag) for flag in {list(flags.values())!r}]
got.append(libc.syscall(56, 0x20000000 | 17, 0, 0, 0, 0))  # clone(CLONE_NEWPID | SIGCHLD)
got.append(libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0))
"""
    assert grade(code, [-1] * (len(flags) + 2)) == ("pass", "1/1 tests passed")


def test_ptrace_keyctl_and_bpf_are_refused():
    code = LIBC + """
got = [libc.ptrace(16, 1, 0, 0), libc.syscall(250, 0, 0, 0, 0), libc.syscall(321, 0, 0, 0)]
"""
    assert grade(code, [-1, -1, -1]) == ("pass", "1/1 tests passed")


def test_three_processes_of_700_mib_exceed_the_answers_memory(whole_answer):
    code = """
import os, time
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(700 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(4)
        os._exit(0)
    kids.append(pid)
got = all(os.waitpid(kid, 0)[1] == 0 for kid in kids)
"""
    verdict, detail = grade(code, True)
    assert verdict == "error" and "memory" in detail, detail


def test_shared_memory_cannot_hold_memory_past_the_limit():
    code = LIBC + """
import mmap, os
got = [libc.shmget(0, 1 << 30, 0o1000 | 0o600), libc.syscall(319, b"x", 0)]  # shmget, memfd_create
for path in ("/dev/shm/x", "/x", "/dev/x"):
    try:
        with open(path, "wb") as fh:
            fh.write(b"x" * (1 << 20))
        got.append(path)
    except OSError:
        pass
"""
    assert grade(code, [-1, -1]) == ("pass", "1/1 tests passed")


def test_the_working_tmpfs_is_sized():
    code = """
got = "full?"
try:
    with open("big", "wb") as fh:
        for _ in range(200):
            fh.write(b"x" * (1 << 20))
    got = "wrote 200 MiB"
except OSError as exc:
    got = exc.errno
"""
    verdict, detail = grade(code, 28, file_bytes=1 << 30)  # ENOSPC
    assert verdict == "pass", detail


def test_an_honest_answer_still_passes_with_every_protection_on(whole_answer):
    code = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"
    assert run_tests(code, "fib", ["fib(10) == 55", "fib(1) == 1"]).verdict == "pass"
    layers = {p.name: p.active for p in protections()}
    assert {k: v for k, v in layers.items() if k != "whole-answer limits"} == dict.fromkeys(
        ["namespaces", "unprivileged id", "no capabilities", "seccomp filter", "kernel knobs",
         "sized filesystems", "hidden tests"], True)
    held = whole_answer == "cgroup" and sandbox_cgroup.unavailable() is None
    assert layers["whole-answer limits"] is (True if held else None)
    said = next(p.detail for p in protections() if p.name == "whole-answer limits")
    capped = held and sandbox_cgroup.cpu_cap_unavailable() is None
    assert ("processes and CPU of the whole answer" in said) is capped and ("sums" in said) is not capped, said


def test_the_filter_holds_the_whole_child_and_one_filter_only():
    """bwrap installs the filter before the interpreter starts (the child imports no ctypes for it):
    exactly one filter holds when the answer runs."""
    code = ("status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
            "import sys\ngot = [status['Seccomp'], status['Seccomp_filters'], 'ctypes' in sys.modules]")
    assert grade(code, ["2", "1", False]) == ("pass", "1/1 tests passed")


def test_a_child_told_of_a_filter_that_does_not_hold_refuses_to_run():
    from workloads.grading.sandbox_child import filter_state

    assert filter_state(True) == "the sandbox's wrapper installed no filter"  # this test process has none
    assert filter_state(False) == "no filter for this machine"


SPINNERS = """
import os, time
kids = []
for _ in range(15):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 8
        while time.monotonic() < end:
            pass
        os._exit(0)
    kids.append(pid)
got = all(os.waitpid(kid, 0)[1] == 0 for kid in kids)
"""


def test_fifteen_spinning_processes_share_one_cpu_budget(whole_answer):
    """RLIMIT_CPU is per process: 15 forked spinners of 1 s of CPU each passed. The answer's CPU
    seconds are counted over all its processes (the cgroup's count, else the namespace's sum)."""
    result = run_tests(SPINNERS + "def f():\n    return got", "f", ["f() == True"],
                       SandboxLimits(wall_s=30, cpu_s=1))
    assert (result.verdict, result.detail) == (
        "timeout", "sandbox: the answer's processes together used more than 1 s of CPU"), result


def _cpu_dir(group: sandbox_cgroup.Cgroup) -> Path:
    """The answer's cgroup that holds its CPU cap (v2: its one; v1: the one in the cpu hierarchy)."""
    return next(Path(d) for d in group.dirs if (Path(d) / ("cpu.max" if group.version == "v2" else "cpu.cfs_quota_us"))
                .exists())


def _throttled(group: sandbox_cgroup.Cgroup) -> int:
    stat = (_cpu_dir(group) / "cpu.stat").read_text()
    return int(dict(line.split() for line in stat.splitlines())["nr_throttled"])


def test_an_answer_s_cgroup_holds_all_its_processes_to_its_cpus():
    """Where the answer's cgroup has a cpu controller (v2 cpu.max, v1 cpu.cfs_quota_us), the kernel
    holds everything in it to ``cpus`` CPUs, so grading cannot starve the server being measured."""
    assert sandbox_cgroup.unavailable() is None, "no cgroup for an answer can be made here"
    assert "cpu" in sandbox_cgroup._bases()[1], "no cpu controller for the answer's cgroup here"
    group = sandbox_cgroup.create(1 << 30, 64, cpus=0.1)
    try:
        assert group.cpus == 0.1
        cpu = _cpu_dir(group)
        cap = ((cpu / "cpu.max").read_text().split() if group.version == "v2" else
               [(cpu / name).read_text().strip() for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us")])
        assert cap == ["10000", "100000"]
        spin = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end:\n    pass"
        spinner = subprocess.Popen([*sandbox_cgroup.enter_argv(group), sys.executable, "-c", spin])
        try:
            assert wait_until(lambda: _throttled(group) > 0, timeout=5)  # the kernel held it back
        finally:
            spinner.kill()
            spinner.wait()
        assert (sandbox_cgroup.cpu_seconds(group) or 0) > 0
    finally:
        sandbox_cgroup.remove(group)
    assert not any(os.path.exists(d) for d in group.dirs)


def test_a_grader_sweeps_only_leftovers_of_dead_graders_of_its_own_pid_namespace():
    assert sandbox_cgroup.unavailable() is None
    base = sandbox_cgroup._bases()[1]["pids"]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ns = sandbox_owner.namespace()
    names = {"dead": f"ddtune-sandbox-{ns}-{dead.stdout.strip()}-0123abcd-0",
             "other namespace": f"ddtune-sandbox-{ns + 1}-{dead.stdout.strip()}-0123abcd-0",
             "live": f"ddtune-sandbox-{ns}-{os.getpid()}-0123abcd-0",
             "untagged": f"ddtune-sandbox-{dead.stdout.strip()}-0"}
    for name in names.values():
        os.mkdir(f"{base}/{name}")
    try:
        sandbox_cgroup.remove(sandbox_cgroup.create(1 << 30, 64))  # each create sweeps first
        assert {k: os.path.exists(f"{base}/{n}") for k, n in names.items()} == {
            "dead": False, "other namespace": True, "live": True, "untagged": True}
    finally:
        for name in names.values():
            if os.path.exists(f"{base}/{name}"):
                os.rmdir(f"{base}/{name}")

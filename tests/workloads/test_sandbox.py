"""The sandbox contains what generated code may do: loops, fork bombs, huge allocations, escapes."""

from pathlib import Path

import psutil

from workloads.sandbox import SandboxLimits, run_tests

FAST = SandboxLimits(wall_s=20, cpu_s=1)


def alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_pass_fail_error():
    assert run_tests("def f(x):\n    return x + 1", "f", ["f(1) == 2"]).verdict == "pass"
    failed = run_tests("def f(x):\n    return x", "f", ["f(1) == 1", "f(1) == 2"])
    assert failed.verdict == "fail" and "test 2 of 2" in failed.detail
    assert run_tests("def f(x)\n", "f", ["f(1)"]).verdict == "error"
    missing = run_tests("def g(x):\n    return x", "f", ["f(1)"])
    assert missing.verdict == "error" and "'f'" in missing.detail
    raised = run_tests("def f(x):\n    return 1 / 0", "f", ["f(1) == 1"])
    assert raised.verdict == "error" and "ZeroDivisionError" in raised.detail


def test_infinite_loop_is_a_timeout():
    result = run_tests("def f(x):\n    while True:\n        pass", "f", ["f(1) == 2"], FAST)
    assert result.verdict == "timeout"


def test_sleeping_forever_hits_the_wall_clock():
    result = run_tests("import time\ntime.sleep(600)", "f", ["f(1)"], SandboxLimits(wall_s=1.5))
    assert result.verdict == "timeout" and "wall clock" in result.detail


def test_ten_gigabyte_allocation_is_refused():
    result = run_tests("x = bytearray(10 * 1024 ** 3)\ndef f():\n    return 1", "f", ["f() == 1"])
    assert result.verdict == "error" and "MemoryError" in result.detail


def test_fork_is_refused_by_the_policy():
    result = run_tests("import os\nos.fork()\ndef f():\n    return 1", "f", ["f() == 1"])
    assert result.verdict == "error" and "os.fork is not allowed" in result.detail


def test_fork_bomb_without_the_policy_is_killed_as_a_group():
    # Finite (at most 200 processes) but far past max_procs; every child sleeps, so only a kill ends it.
    bomb = (
        "import os, time\n"
        "for i in range(200):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        time.sleep(120)\n"
        "        os._exit(0)\n"
        "    print(pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    result = run_tests(bomb, "f", ["f()"], SandboxLimits(wall_s=30, max_procs=8), audit=False)
    assert result.verdict == "error" and "processes" in result.detail
    pids = [int(x) for x in result.output.split()]
    assert len(pids) > 8
    assert [p for p in pids if alive(p)] == []


def test_writing_outside_the_working_directory_is_refused(tmp_path):
    target = tmp_path / "escape.txt"
    code = f"open({str(target)!r}, 'w').write('x')\ndef f():\n    return 1"
    result = run_tests(code, "f", ["f() == 1"])
    assert result.verdict == "error" and "outside the working directory" in result.detail
    assert not target.exists()
    os_remove = f"import os\nos.remove({str(Path(__file__))!r})"
    assert run_tests(os_remove, "f", ["True"]).verdict == "error"
    assert Path(__file__).exists()


def test_writing_inside_the_working_directory_is_allowed():
    code = "open('scratch.txt', 'w').write('hi')\ndef f():\n    return open('scratch.txt').read()"
    assert run_tests(code, "f", ["f() == 'hi'"]).verdict == "pass"


def test_callers_secrets_do_not_reach_the_code(monkeypatch):
    monkeypatch.setenv("DDTUNE_TEST_SECRET", "hunter2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code = "import os\ndef f():\n    return dict(os.environ)"
    result = run_tests(code, "f", ["'DDTUNE_TEST_SECRET' not in f()", "'OPENAI_API_KEY' not in f()"])
    assert result.verdict == "pass", result.detail


def test_exit_and_output_flood_do_not_confuse_the_verdict():
    assert run_tests("raise SystemExit(0)", "f", ["True"]).verdict == "error"
    flood = "print('x' * 100000)\nprint('{\"verdict\": \"pass\"}')\ndef f():\n    return 0"
    assert run_tests(flood, "f", ["f() == 1"]).verdict == "fail"

"""The sandbox contains what generated code may do: loops, fork bombs, huge allocations, full disks,
escapes; and without bubblewrap it grades nothing."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.core.errors import ConfigError
from backends.core.paths import problems_file
from tests.helpers import REPO
from tests.workloads.sandbox_support import path_without_bwrap, token, with_token
from workloads.grading import sandbox_isolation, sandbox_view
from workloads.grading.sandbox import SandboxLimits, isolation, run_tests

FAST = SandboxLimits(wall_s=20, cpu_s=1)


def test_pass_fail_error():
    assert run_tests("def f(x):\n    return x + 1", "f", ["f(1) == 2"]).verdict == "pass"
    failed = run_tests("def f(x):\n    return x", "f", ["f(1) == 1", "f(1) == 2"])
    assert failed.verdict == "fail" and "test 2 of 2" in failed.detail
    assert run_tests("def f(x)\n", "f", ["f(1) == 1"]).verdict == "error"
    missing = run_tests("def g(x):\n    return x", "f", ["f(1) == 1"])
    assert missing.verdict == "error" and "'f'" in missing.detail
    raised = run_tests("def f(x):\n    return 1 / 0", "f", ["f(1) == 1"])
    assert raised.verdict == "error" and "ZeroDivisionError" in raised.detail


def test_results_keep_their_exact_types():
    code = "def f(x):\n    return [x, (x, None), {'k': [1.5]}, {(1, 2): True}]"
    assert run_tests(code, "f", ["f(1) == [1, (1, None), {'k': [1.5]}, {(1, 2): True}]"]).verdict == "pass"
    # a list where the test wants a tuple is a fail, as it was when the test ran as a Python expression
    assert run_tests("def f():\n    return [0, 1]", "f", ["f() == (0, 1)"]).verdict == "fail"
    assert run_tests("def f():\n    return 1", "f", ["f() is True"]).verdict == "fail"
    assert run_tests("def f():\n    return True", "f", ["f() is True", "f() == 1"]).verdict == "pass"


def test_a_later_failure_is_reported_after_an_earlier_one():
    code = "def f(x):\n    if x == 2:\n        while True:\n            pass\n    return x"
    result = run_tests(code, "f", ["f(1) == 0", "f(2) == 2"], FAST)
    assert result.verdict == "fail" and "test 1 of 2" in result.detail


def test_infinite_loop_is_a_timeout():
    result = run_tests("def f(x):\n    while True:\n        pass", "f", ["f(1) == 2"], FAST)
    assert result.verdict == "timeout"


def test_sleeping_forever_hits_the_wall_clock():
    result = run_tests("import time\ntime.sleep(600)", "f", ["f(1) == 1"], SandboxLimits(wall_s=1.5))
    assert result.verdict == "timeout" and "wall clock" in result.detail


def test_ten_gigabyte_allocation_is_refused():
    result = run_tests("x = bytearray(10 * 1024 ** 3)\ndef f():\n    return 1", "f", ["f() == 1"])
    assert result.verdict == "error" and "MemoryError" in result.detail


def test_fork_bomb_is_killed_whole():
    # Finite (at most 200 processes) but far past max_procs; every child becomes a sleeper with the
    # token in its command line, so only a kill ends it and psutil can look for survivors.
    tok = token()
    bomb = (
        "import os, sys, time\n"
        "for i in range(200):\n"
        "    if os.fork() == 0:\n"
        f"        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', {tok!r}])\n"
        "time.sleep(120)\n"
    )
    result = run_tests(bomb, "f", ["f() == 1"], SandboxLimits(wall_s=30, max_procs=8))
    assert result.verdict == "error" and "processes" in result.detail
    assert with_token(tok) == []


def test_a_full_disk_is_an_error():
    big = "open('big', 'wb').write(b'x' * (20 << 20))\ndef f():\n    return 1"
    result = run_tests(big, "f", ["f() == 1"])  # past the 16 MiB file-size limit
    assert result.verdict == "error" and "File too large" in result.detail


def test_many_files_fill_only_the_capped_tmpfs():
    fill = "for i in range(40):\n    open(f'f{i}', 'wb').write(b'x' * (8 << 20))\ndef f():\n    return 1"
    result = run_tests(fill, "f", ["f() == 1"])
    assert result.verdict == "error" and "No space left" in result.detail


def test_writing_outside_the_working_directory_is_refused(tmp_path):
    target = tmp_path / "escape.txt"
    code = f"open({str(target)!r}, 'w').write('x')\ndef f():\n    return 1"
    result = run_tests(code, "f", ["f() == 1"])
    assert result.verdict == "error" and not target.exists()
    os_remove = f"import os\nos.remove({str(Path(__file__))!r})\ndef f():\n    return 1"
    assert run_tests(os_remove, "f", ["f() == 1"]).verdict == "error"
    assert Path(__file__).exists()


def test_writing_inside_the_working_directory_is_allowed():
    code = "open('scratch.txt', 'w').write('hi')\ndef f():\n    return open('scratch.txt').read()"
    assert run_tests(code, "f", ["f() == 'hi'"]).verdict == "pass"


def test_callers_secrets_do_not_reach_the_code(monkeypatch):
    monkeypatch.setenv("DDTUNE_TEST_SECRET", "hunter2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code = "import os\ndef f(name):\n    return os.environ.get(name)"
    result = run_tests(code, "f", ["f('DDTUNE_TEST_SECRET') is None", "f('OPENAI_API_KEY') is None"])
    assert result.verdict == "pass", result.detail


def test_exit_and_output_flood_do_not_confuse_the_verdict():
    assert run_tests("raise SystemExit(0)", "f", ["f() == 1"]).verdict == "error"
    flood = "print('x' * 100000)\nprint('{\"verdict\": \"pass\"}')\ndef f():\n    return 0"
    result = run_tests(flood, "f", ["f() == 1"])
    assert result.verdict == "fail" and result.output.endswith('{"verdict": "pass"}\n')


def test_a_test_not_of_the_form_call_equals_value_is_refused():
    for bad in ("f(1)", "f(1) == g(2)", "f(1) < 2", "1 == 1", "f(1) is 2", "f(1) == {1, 2}"):
        with pytest.raises(ValueError):
            run_tests("def f(x):\n    return x", "f", [bad])


def test_grading_runs_in_bubblewrap():
    assert isolation().kind == "bwrap"  # CI installs bubblewrap; a machine without it fails here


def test_without_bubblewrap_nothing_is_graded(monkeypatch, tmp_path):
    marker = tmp_path / "ran"
    monkeypatch.setenv("PATH", path_without_bwrap(tmp_path / "bin"))
    sandbox_isolation.facts.cache_clear()
    try:
        with pytest.raises(ConfigError) as err:
            run_tests(f"open({str(marker)!r}, 'w').write('x')\ndef f():\n    return 1", "f", ["f() == 1"])
    finally:
        sandbox_isolation.facts.cache_clear()
    assert err.value.message == "grading needs bubblewrap, and here bwrap not installed"
    assert "apt-get install bubblewrap" in err.value.hint
    assert not marker.exists()  # the answer never ran, in no weaker sandbox either


def test_no_process_of_a_run_outlives_it():
    tok = token()
    code = "import os\nif os.fork() == 0:\n" + "".join("    " + stmt + "\n" for stmt in
           ["import sys", f"os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', {tok!r}])"])
    code += "import time\ntime.sleep(0.5)\ndef f():\n    return 1"
    assert run_tests(code, "f", ["f() == 1"]).verdict == "pass"
    assert with_token(tok) == []


def test_doctor_says_the_hidden_tests_are_exposed_when_a_view_shows_them(monkeypatch):
    # the canary check can fail: a view that binds the presets (as the sandbox once bound a clone
    # under /usr) and covers nothing is reported, naming what an answer finds
    child_paths = sandbox_view._child_paths
    monkeypatch.setattr(sandbox_view, "_child_paths", lambda exe: ([*child_paths(exe)[0], str(REPO / "presets")],
                                                                   child_paths(exe)[1]))
    monkeypatch.setattr(sandbox_view, "_covers", lambda dirs, kept: [])
    sandbox_view.view.cache_clear()
    try:
        found = sandbox_isolation.hidden_tests()
    finally:
        sandbox_view.view.cache_clear()
    assert found.active is False
    assert found.detail == (f"an answer finds a canary in {REPO / 'presets' / 'problems'}, {problems_file()}, "
                            f"{REPO / 'presets' / '__init__.py'}")
    mine = f"{sandbox_view.CANARY_PREFIX}{os.getpid()}-"
    assert [p.name for p in (REPO / "presets" / "problems").iterdir() if p.name.startswith(mine)] == []  # removed


_any_char = st.characters(categories=["Cs", "Cc", "L", "N", "P", "S", "Z"])  # lone surrogates, controls, astral
_plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(_any_char),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20)


@given(_plain)
def test_the_childs_encoder_writes_what_json_dumps_writes(value):
    """The child sends its results without importing json (sandbox_child.dumps); the trusted side
    reads them with json: for every kind of plain data both give the same line, surrogates, NaN,
    huge ints and control characters included."""
    from workloads.grading.sandbox_child import dumps, plain

    record = ["value", plain(value)]
    assert dumps(record) == json.dumps(record, separators=(",", ":"))


def test_the_childs_encoder_refuses_what_json_refuses():
    from workloads.grading.sandbox_child import dumps

    with pytest.raises(ValueError):  # past the int-to-str conversion limit, as json.dumps
        dumps({"value": 10 ** 5000})
    with pytest.raises(ValueError):
        json.dumps({"value": 10 ** 5000})


def test_the_grader_sleeps_while_the_answer_runs(monkeypatch):
    """Supervising an answer wakes the grader for its output, its exit and the watchdog's looks (every
    50 ms, then 150 ms), not on a 10 ms poll, and never spins on a pipe whose writers have gone."""
    import selectors

    from workloads.grading import sandbox

    timeouts: list[float | None] = []

    class Counting(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
        def select(self, timeout=None):
            timeouts.append(timeout)
            return super().select(timeout)

    monkeypatch.setattr(sandbox.selectors, "DefaultSelector", Counting)
    code = "import time\ndef f():\n    time.sleep(1.5)\n    return 1"
    assert run_tests(code, "f", ["f() == 1", "f() == 1"]).verdict == "pass"
    assert len(timeouts) < 40  # 3 s of running at most ~25 looks, and a few outputs; a 10 ms poll woke ~150 times
    assert sum(1 for t in timeouts if t is not None and t < 0.001) < 5  # no busy loop


def test_the_answer_runs_under_its_own_rlimits():
    """bubblewrap sets no rlimit: the child does, before the answer runs (per process; the cgroup or
    the watchdog holds the whole answer's totals)."""
    limits = SandboxLimits(cpu_s=3, memory_bytes=512 << 20, file_bytes=1 << 20, open_files=32)
    code = ("import resource as r\ngot = [r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in "
            "('CPU', 'AS', 'FSIZE', 'NOFILE', 'CORE', 'MSGQUEUE')]\ndef f():\n    return got")
    expected = [[3, 4], [512 << 20] * 2, [1 << 20] * 2, [32, 32], [0, 0], [0, 0]]
    result = run_tests(code, "f", [f"f() == {[tuple(pair) for pair in expected]!r}"], limits)
    assert result.verdict == "pass", result.detail


def test_an_answer_that_floods_the_results_pipe_is_stopped_at_8_mib():
    code = ("import os, sys, time\nfd = int(sys.argv[1])\nfor _ in range(12):\n    os.write(fd, b'x' * (1 << 20))\n"
            "time.sleep(60)\ndef f():\n    return 1")
    result = run_tests(code, "f", ["f() == 1"], SandboxLimits(wall_s=20))
    assert (result.verdict, result.detail) == ("error", "sandbox: the answer sent more than 8 MiB of results")

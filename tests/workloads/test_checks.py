"""Hidden tests split into (call, comparison, expected value), and the parent's side of the results
pipe: only plain data decodes, and a child that sends anything else gets no pass."""

import json
import os
import subprocess
import sys

import pytest

from workloads.grading.checks import Malformed, decode, parse_test
from workloads.grading.sandbox_judge import judge
from workloads.grading.sandbox_isolation import sweep_stale


def test_a_test_splits_into_call_op_and_literal():
    check = parse_test("tuple(two_sum([2, 7], 9)) == (0, 1)", "two_sum")
    assert (check.call, check.op, check.expected) == ("tuple(two_sum([2, 7], 9))", "==", (0, 1))
    assert parse_test("f('x') is None", "f").op == "is"
    assert parse_test("f(-1) != -2", "f").expected == -2


@pytest.mark.parametrize("bad, why", [
    ("f(", "not a Python expression"),
    ("f(1)", "not of the form"),
    ("f(1) == 1 == 1", "not of the form"),
    ("f(1) < 2", "not of the form"),
    ("f(1) == g(2)", "not a literal"),
    ("f(1) == {1, 2}", "a set, not plain data"),
    ("f(1) is 2", "compares only with True, False or None"),
    ("g(1) == 2", "does not call f"),
])
def test_other_shapes_are_refused_with_a_reason(bad, why):
    with pytest.raises(ValueError) as err:
        parse_test(bad, "f")
    assert why in str(err.value)


def test_decode_rebuilds_exact_plain_data():
    wire = json.loads('[1, 2.5, "s", null, true, {"tuple": [1, [2]]}, {"dict": [["k", {"tuple": []}], [1, 2]]}]')
    assert decode(wire) == [1, 2.5, "s", None, True, (1, [2]), {"k": (), 1: 2}]
    assert type(decode(wire)[5]) is tuple


@pytest.mark.parametrize("wire", ['{"a": 1}', '{"tuple": 1}', '{"dict": [[[1], 2]]}', '{"dict": [[1]]}',
                                  "[" * 150 + "]" * 150])
def test_decode_refuses_anything_else(wire):
    with pytest.raises(Malformed):
        decode(json.loads(wire))


def records(*lines):
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_the_verdict_comes_from_the_parents_comparison():
    checks = [parse_test("f(1) == 2", "f"), parse_test("f(2) is True", "f")]
    assert judge(checks, records({"defined": True}, {"value": 2}, {"value": True}), None, None, 0, "")[0] == "pass"
    assert judge(checks, records({"defined": True}, {"value": 2}, {"value": 1}), None, None, 0, "") == (
        "fail", "test 2 of 2 failed: f(2) is True")
    raised = judge(checks, records({"defined": True}, {"raised": "ValueError: \x1b[31mx"}), None, None, 0, "")
    assert raised == ("error", "test 1 raised ValueError: ?[31mx: f(1) == 2")  # no terminal escapes get through


@pytest.mark.parametrize("data", [
    records({"verdict": "pass"}),
    records({"defined": True}, {"value": 2}, {"value": True}, {"value": 3}),
    records({"defined": True}, {"value": 2}, {"value": True, "verdict": "pass"}),
    records({"defined": True}, {"value": 2}) + b"not json\n",
    records({"defined": True}, {"value": {"dict": [[[1], 2]]}}),
])
def test_forged_or_malformed_results_are_an_error(data):
    checks = [parse_test("f(1) == 2", "f"), parse_test("f(2) is True", "f")]
    verdict, detail = judge(checks, data, None, None, 0, "")
    assert verdict in ("error", "fail") and verdict != "pass", detail


def test_results_cut_short_say_how_the_child_ended():
    checks = [parse_test("f(1) == 2", "f")]
    assert judge(checks, records({"defined": True}), None, 24, 152, "") == ("timeout", "CPU time limit exceeded")
    assert judge(checks, records({"defined": True}), ("timeout", "wall"), None, 0, "") == ("timeout", "wall")
    complete = records({"defined": True}, {"value": 2})
    assert judge(checks, complete, ("error", "procs"), None, 0, "") == ("error", "procs")
    ended = judge(checks, b"", None, None, 3, "boom\n")
    assert ended == ("error", "sandbox process exited 3 before test 1 finished boom")


def test_stale_sandbox_dirs_go_only_when_their_process_is_dead(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"ddtune-sandbox-{done.stdout.strip()}-abc"
    live = tmp_path / f"ddtune-sandbox-{os.getpid()}-abc"
    old, new = tmp_path / "ddtune-sandbox-legacyold", tmp_path / "ddtune-sandbox-legacynew"
    for path in (dead, live, old, new):
        path.mkdir()
        (path / "task.json").write_text("{}")
    os.utime(old, (0, 0))
    assert sweep_stale(str(tmp_path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, new.name])

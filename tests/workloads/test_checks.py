"""Hidden tests split into (call, comparison, expected value), and the parent's side of the results
pipe: only plain data decodes, and a child that sends anything else gets no pass."""

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.grading.checks import parse_test
from workloads.grading.sandbox_judge import judge
from workloads.grading.sandbox_wire import (RECORD_BYTES, TOO_LARGE, Malformed, Pairs, bound, decode, equal,
                                           value_record)


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
    wire = json.loads('["l", 1, 2.5, "s", null, true, ["t", 1, ["l", 2]], ["d", "k", ["t"], 1, 2]]')
    got = decode(wire)
    assert got[:6] == [1, 2.5, "s", None, True, (1, [2])] and type(got[5]) is tuple
    assert type(got[6]) is Pairs and got[6].items == (("k", ()), (1, 2))  # a dict's pairs: no table built here


@pytest.mark.parametrize("wire", ['{"a": 1}', '["x", 1]', '["d", ["l", 1], 2]', '["d", 1]', "[]",
                                  '["l", ' * 150 + "1" + "]" * 150, '["d", ["t", ["d"]], 1]'])
def test_decode_refuses_anything_else(wire):
    with pytest.raises(Malformed):
        decode(json.loads(wire))


def records(*lines):
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


DEFINED = ["defined"]


def test_the_verdict_comes_from_the_parents_comparison():
    checks = [parse_test("f(1) == 2", "f"), parse_test("f(2) is True", "f")]
    assert judge(checks, records(DEFINED, ["value", 2], ["value", True]), None, None, 0, "")[0] == "pass"
    assert judge(checks, records(DEFINED, ["value", 2], ["value", 1]), None, None, 0, "") == (
        "fail", "test 2 of 2 failed: f(2) is True")
    raised = judge(checks, records(DEFINED, ["raised", "ValueError: \x1b[31mx"]), None, None, 0, "")
    assert raised == ("error", "test 1 raised ValueError: ?[31mx: f(1) == 2")  # no terminal escapes get through


@pytest.mark.parametrize("data", [
    records({"verdict": "pass"}),
    records(["verdict", "pass"]),
    records(DEFINED, ["value", 2], ["value", True], ["value", 3]),
    records(DEFINED, ["value", 2], ["value", True, "pass"]),
    records(DEFINED, ["value", 2]) + b"not json\n",
    records(DEFINED, ["value", ["d", ["l", 1], 2]]),
    records({"defined": True}, {"value": 2}, {"value": True}),  # the old wire's objects
    records(DEFINED, ["value", 2], {"value": True}),
    records(DEFINED, ["raised", "x" * 9000]),
])
def test_forged_or_malformed_results_are_an_error(data):
    checks = [parse_test("f(1) == 2", "f"), parse_test("f(2) is True", "f")]
    verdict, detail = judge(checks, data, None, None, 0, "")
    assert verdict in ("error", "fail") and verdict != "pass", detail


def test_results_cut_short_say_how_the_child_ended():
    checks = [parse_test("f(1) == 2", "f")]
    assert judge(checks, records(DEFINED), None, 24, 152, "") == ("timeout", "CPU time limit exceeded")
    assert judge(checks, records(DEFINED), ("timeout", "wall"), None, 0, "") == ("timeout", "wall")
    complete = records(DEFINED, ["value", 2])
    assert judge(checks, complete, ("error", "procs"), None, 0, "") == ("error", "procs")
    ended = judge(checks, b"", None, None, 3, "boom\n")
    assert ended == ("error", "sandbox process exited 3 before test 1 finished boom")


M = sys.hash_info.modulus
FLOOD_KEYS = {  # keys that all hash alike, of each kind a dict the child sends can hold
    "int": lambda k: k * M,
    "float": lambda k: float(k * 2 ** 61),  # integral floats hash as their ints: 2**61 == 1 modulo M
    "tuple": lambda k: ["t", k * M],
    "str": lambda k: f"k{k}",  # str hashes are keyed per process: here only the bytes bound
    "nan": lambda k: float("nan"),  # each NaN is its own key
}


@pytest.mark.parametrize("kind", sorted(FLOOD_KEYS))
def test_a_flood_of_colliding_keys_is_refused_by_its_size_unread(kind):
    """The red team's class: a few KB of answer wrote one line of 270k dict keys that all hash alike;
    rebuilding that dict here took 31 minutes. A line longer than any value equal to the expected one
    is never parsed: the verdict says so, whatever the keys."""
    key = FLOOD_KEYS[kind]
    flat = [x for k in range(270_000) for x in (key(k), 0)]
    line = json.dumps(["value", ["d", *flat]], separators=(",", ":")).encode()
    check = parse_test("f() == {1: 2, 3: 4}", "f")
    assert value_record(line, check.bound) is TOO_LARGE
    assert judge([check], b'["defined"]\n' + line + b"\n", None, None, 0, "") == (
        "fail", "test 1 of 1 failed: sent more than any value equal to the expected one: f() == {1: 2, 3: 4}")
    other = parse_test("f() != {1: 2, 3: 4}", "f")  # and it is not equal, so this one holds
    assert judge([other], b'["defined"]\n' + line + b"\n", None, None, 0, "")[0] == "pass"


def test_colliding_keys_within_the_bound_are_looked_up_in_the_expected_table_only():
    """Where the expected dict is as large as the flood, the sent keys are decoded into pairs (no
    table of theirs) and each is looked up in the expected dict: a walk bounded by its size."""
    n = 3000
    check = parse_test("f() == {" + ", ".join(f"{k}: 0" for k in range(n)) + "}", "f")
    line = json.dumps(["value", ["d", *[x for k in range(n) for x in (k * M, 0)]]]).encode()
    got = value_record(line, check.bound)
    assert type(got) is Pairs and len(got.items) == n
    assert not check.holds(got)
    same = value_record(json.dumps(["value", ["d", *[x for k in range(n) for x in (k, 0)]]]).encode(), check.bound)
    assert check.holds(same)


@pytest.mark.parametrize("sent, expected, equal_in_python", [
    (["d", 1, "a", 1.0, "a"], {1: "a", 2: "a"}, False),  # a key twice is no real dict
    (["d", True, "a"], {1: "a"}, True),
    (["d", float("nan"), 1], {float("inf"): 1}, False),
    (["l", 1, 2.0, True], [1, 2, 1], True),
    (["t", 1], [1], False),
    (["l", 1], (1,), False),
    (["d"], [], False),
    (["l", ["d", "k", ["t", 1, 2]]], [{"k": (1, 2)}], True),
])
def test_equality_without_tables_is_python_s(sent, expected, equal_in_python):
    assert equal(decode(sent), expected) is equal_in_python


_scalar = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e308])
           | st.text(alphabet="ab\u00e9\U0001f600", max_size=3))
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(_scalar | st.tuples(_scalar), inner, max_size=3), max_leaves=8)




def _swapped(value):
    """The same items in the other sequence type: equal to nothing it was equal to."""
    return list(value) if type(value) is tuple else tuple(value) if type(value) is list else value


_pairs = st.tuples(_value, _value) | _value.map(lambda v: (v, v)) | _value.map(lambda v: (v, _swapped(v)))


@settings(max_examples=500, deadline=None)
@given(_pairs)
def test_what_the_child_sends_compares_as_python_compares(pair):
    """The child's encoding decoded here compares with the expected value exactly as ``==`` on the
    real values does, and never takes more bytes than the bound of any value it equals."""
    from workloads.grading.sandbox_child import dumps, plain

    sent, expected = pair
    line = dumps(["value", plain(sent)]).encode()
    got = value_record(line, bound(expected))
    assert equal(got, expected) is (sent == expected)
    assert len(line) <= bound(sent) + RECORD_BYTES
    if sent == expected:
        assert got is not TOO_LARGE


@pytest.mark.parametrize("sent, expected", [(int(1e308), 1e308), (1.0, True), ("\U0001f600" * 5, "\U0001f600" * 5),
                                            (["\x00"], ["\x00"]), ({1.0: 2.0}, {True: 2})])
def test_the_bound_holds_every_encoding_of_an_equal_value(sent, expected):
    from workloads.grading.sandbox_child import dumps, plain

    assert sent == expected
    assert len(dumps(["value", plain(sent)])) <= bound(expected) + RECORD_BYTES

"""The built-in problem set: shape, the five contract ids, tests the sandbox can judge, and every
reference passing in the sandbox (in the default mode)."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from backends.core.errors import ConfigError, UsageError
from workloads.grading.extract import defines
from workloads.grading.problems import load_problems, select_problems
from workloads.grading.sandbox import run_tests

PROBLEMS = load_problems()


def test_at_least_30_problems_with_the_contract_ids():
    ids = [p.id for p in PROBLEMS]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)
    for pid in ("is_palindrome", "fib", "merge_sorted", "word_count", "gcd"):
        assert pid in ids


def test_every_problem_is_well_formed():
    for p in PROBLEMS:
        assert p.function in p.signature and p.signature.startswith("def "), p.id
        assert defines(p.solution, p.function), p.id
        assert len(p.tests) >= 4, p.id
        assert p.prompt in p.chat_prompt() and "```python" in p.chat_prompt()


def test_every_reference_solution_passes_its_hidden_tests_in_the_sandbox():
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda p: (p.id, run_tests(p.solution, p.function, p.tests)), PROBLEMS))
    failed = [(pid, r.verdict, r.detail) for pid, r in results if r.verdict != "pass"]
    assert failed == []


def test_hidden_tests_reject_a_wrong_answer():
    fib = select_problems(PROBLEMS, ["fib"])[0]
    wrong = "def fib(n):\n    return n\n"
    assert run_tests(wrong, "fib", fib.tests).verdict == "fail"


def test_select_unknown_id_names_it():
    with pytest.raises(UsageError) as err:
        select_problems(PROBLEMS, ["fib", "nope"])
    assert "nope" in err.value.message and "--problems" in err.value.message


def test_bad_problems_file_names_the_field(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('[[problem]]\nid = "x"\nsignature = "def x():"\nprompt = "p"\n'
                   'solution = "def x(): pass"\ntests = []\n')
    with pytest.raises(ConfigError) as err:
        load_problems(bad)
    assert "'tests'" in err.value.message


def test_a_test_the_sandbox_cannot_judge_is_refused_at_load(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('[[problem]]\nid = "x"\nsignature = "def x():"\nprompt = "p"\nsolution = "def x(): pass"\n'
                   'tests = ["x() == 1", "x() in (1, 2)"]\n')
    with pytest.raises(ConfigError) as err:
        load_problems(bad)
    assert "problem x: tests[1] ('x() in (1, 2)'): not of the form CALL == VALUE" in err.value.message
    assert "CALL == VALUE" in err.value.hint


GOOD = ('[[problem]]\nid = "x"\nsignature = "def x():"\nprompt = "p"\nsolution = "def x(): pass"\n'
        'tests = ["x() is None"]\n')


@pytest.mark.parametrize("data, match", [
    (b"\xff\xfe\x00\x01", "not a UTF-8 text file"),
    (b"[[problem]\n", "not valid TOML"),
    (b"problem = 5\n", "problem: expected a list"),
    (b"problem = [5]\n", "problem #1: expected a table"),
    (GOOD.replace('id = "x"', "id = 3").encode(), "field 'id': expected a string, got 3"),
    (GOOD.replace('tests = ["x() is None"]', "tests = [1]").encode(), "tests[0]: expected a string"),
    (GOOD.replace('tests = ["x() is None"]', 'tests = "x"').encode(), "field 'tests': expected a list"),
    ((GOOD + 'function = 7\n').encode(), "field 'function': expected a string"),
    (b"", "no [[problem]] entries"),
])
def test_bad_problems_files_name_file_and_field(tmp_path, data, match):
    bad = tmp_path / "p.toml"
    bad.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_problems(bad)
    assert err.value.message.startswith(f"{bad}: ") and match in err.value.message

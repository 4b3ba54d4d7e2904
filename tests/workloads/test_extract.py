"""Answer extraction: thinking is never graded, the last answer block wins, truncation is named."""

import asyncio
import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.grading import extract
from workloads.grading.extract import answer_part, defines, extract_code, fenced_blocks

GOOD = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"
WRONG = "def fib(n):\n    return n"


def block(code, lang="python"):
    return f"```{lang}\n{code}\n```"


def test_code_only_inside_separated_reasoning_is_not_graded():
    ex = extract_code("", f"Let me try:\n{block(GOOD)}\nok", "fib", "stop")
    assert ex.status == "no_code" and ex.code is None


def test_inline_thinking_code_is_ignored_and_answer_code_used():
    content = f"<think>draft:\n{block(WRONG)}\nhmm</think>\nHere it is:\n{block(GOOD)}\n"
    ex = extract_code(content, None, "fib", "stop")
    assert ex.status == "ok" and ex.code == GOOD


def test_inline_thinking_with_code_after_think_only_in_thinking_is_no_code():
    content = f"<think>{block(GOOD)}</think>\nThe answer is fib."
    assert extract_code(content, None, "fib", "stop").status == "no_code"


def test_text_after_last_close_think_without_open_tag():
    content = f"reasoning {block(WRONG)} </think> one </think>\n{block(GOOD)}"
    assert extract_code(content, None, "fib", "stop").code == GOOD


def test_unclosed_inline_thinking_cut_at_max_tokens_is_truncated():
    content = f"<think>still thinking {block(GOOD)} and more"
    ex = extract_code(content, None, "fib", "length")
    assert ex.status == "truncated"


def test_separated_reasoning_cut_before_answer_is_truncated():
    ex = extract_code("", "long reasoning ...", "fib", "length")
    assert ex.status == "truncated" and "before the answer" in ex.detail


def test_answer_cut_inside_code_block_is_truncated():
    ex = extract_code("Here:\n```python\ndef fib(n):\n    a, b", "r", "fib", "length")
    assert ex.status == "truncated" and "unclosed" in ex.detail


def test_complete_block_before_cut_is_still_graded():
    ex = extract_code(f"{block(GOOD)}\nAlso, an explanation that goes on and", None, "fib", "length")
    assert ex.status == "ok" and ex.code == GOOD


def test_last_block_defining_the_function_wins_over_a_later_usage_example():
    content = f"{block(WRONG)}\nfixed:\n{block(GOOD)}\nusage:\n{block('print(fib(10))')}"
    assert extract_code(content, None, "fib", "stop").code == GOOD


def test_accepted_languages_and_bare_fences():
    for lang in ("python", "py", "python3", "", "Python"):
        assert extract_code(block(GOOD, lang), None, "fib", "stop").code == GOOD, lang


def test_non_python_block_only_if_it_defines_the_function():
    assert extract_code(block("pip install x", "bash"), None, "fib", "stop").status == "no_code"
    assert extract_code(block(GOOD, "text"), None, "fib", "stop").code == GOOD


def test_falls_back_to_last_python_block_without_the_definition():
    content = f"{block('x = 1')}\n{block('y = 2')}"
    assert extract_code(content, None, "fib", "stop").code == "y = 2"


def test_no_fence_at_all_is_no_code():
    assert extract_code(GOOD, None, "fib", "stop").status == "no_code"
    assert extract_code(None, None, "fib", "stop").detail == "empty response"


def test_answer_part_rules():
    assert answer_part("answer", "thinking") == "answer"
    assert answer_part("<think>x</think>answer", None) == "answer"
    assert answer_part("<think>never closed", None) == ""
    assert answer_part("plain", None) == "plain"


def test_fenced_blocks_longer_fences_and_tildes():
    blocks, unclosed = fenced_blocks("````python\na\n```\nb\n````\n~~~\nc\n~~~")
    assert [b.code for b in blocks] == ["a\n```\nb", "c"] and not unclosed

TEXT = st.text(alphabet=st.sampled_from(list("ab def():\n`~<>/think")), max_size=200)


@settings(max_examples=300, deadline=None)
@given(thinking=TEXT, answer=TEXT, separated=st.booleans(), finish=st.sampled_from(["stop", "length", None]))
def test_code_from_the_thinking_is_never_picked(thinking, answer, separated, finish):
    marker = "def fib(n):\n    return 'FROM_THINKING'"
    think = f"{thinking}\n```python\n{marker}\n```\n{thinking}"
    answer = answer.replace("<think>", "").replace("</think>", "")
    if separated:
        ex = extract_code(answer, think, "fib", finish)
    else:
        ex = extract_code(f"<think>{think.replace('</think>', '')}</think>{answer}", None, "fib", finish)
    assert ex.status in ("ok", "no_code", "truncated")
    assert ex.code is None or "FROM_THINKING" not in ex.code
    assert (ex.status == "ok") == (ex.code is not None)


def test_the_red_teams_long_fence_lines_are_scanned_in_one_pass():
    """12 KB answers whose fence lines the old regular expression backtracked over for a second (its
    `[ \\t]*`, language and rest-of-line parts could each take the same blanks). Each line is looked
    at a bounded number of times: a marked line (three fence characters in a row) once by `opening`."""
    calls = []
    real = extract.opening

    def counting(line):
        calls.append(len(line))
        return real(line)

    answers = ["```" + " " * 12_000 + "`\n", "~~~" + " \t" * 6_000 + "`", "```" + "a" * 12_000 + "`\n```x",
               ("```" + " " * 1_000 + "`\n") * 12, "```python\n" + "```" + "a" * 12_000 + "\n```"]
    for answer in answers:
        calls.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(extract, "opening", counting)
            ex = extract_code(answer, None, "fib", "stop")
        assert ex.status in ("ok", "no_code")
        assert sum(calls) <= len(answer), (len(calls), sum(calls))


def test_an_answer_past_the_cap_is_not_scanned():
    ex = extract_code("x" * (extract.MAX_ANSWER_CHARS + 1) + block(GOOD), None, "fib", "stop")
    assert ex.status == "no_code" and "more than the" in ex.detail


# The extraction as it was (regular expressions), kept here as the reference for its rules.
_OLD_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*$")


def old_fenced_blocks(text):
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = _OLD_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        if j >= len(lines):
            return blocks, True
        blocks.append((lang, "\n".join(lines[i + 1:j])))
        i = j + 1
    return blocks, False


def old_defines(code, function):
    return re.search(r"^[ \t]*(async[ \t]+)?def[ \t]+" + re.escape(function) + r"[ \t]*\(", code, re.M) is not None


PIECES = st.sampled_from(["```", "````", "~~~", "~~~~", "``", "`", "~", " ", "\t", "\r", "\n", "\n", "python", "Py",
                          "c++", "x.y", "-", "é", "def", "async", "fib", "fibx", "(", ":", "a",
                          "def fib(", "asyncdef fib(", "async def", " fib ("])
FENCED = st.lists(PIECES, max_size=60).map("".join)


@settings(max_examples=1500, deadline=None)
@given(FENCED)
def test_the_scanner_keeps_the_rules_of_the_regular_expressions(text):
    blocks, unclosed = fenced_blocks(text)
    assert ([(b.lang, b.code) for b in blocks], unclosed) == old_fenced_blocks(text)
    assert defines(text, "fib") == old_defines(text, "fib")


def test_grading_extracts_in_a_worker_thread_not_on_the_event_loop(monkeypatch):
    """The load client times streams on the event loop: every grading path (eval, bench, live load,
    regrade) goes through grade_async, whose extraction must run in its worker thread."""
    from workloads.grading import evaluate
    from workloads.grading.problems import load_problems, select_problems

    threads = []
    real = evaluate.extract_code

    def spy(*args):
        threads.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(evaluate, "extract_code", spy)
    problem = select_problems(load_problems(), ["fib"])[0]
    hostile = "```" + " " * 12_000 + "`\n"

    async def grade():
        return threading.get_ident(), await evaluate.grade_async(problem, evaluate.RawResponse("fib", hostile, None,
                                                                                             "stop"))

    loop_thread, graded = asyncio.run(grade())
    assert graded.verdict == "no_code" and len(threads) == 1 and threads[0] != loop_thread

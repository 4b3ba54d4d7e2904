"""What the simulator says: answers like a thinking coding model, cut into tokens.

Problems are read as data from ``presets/problems/coding.toml`` (any number of ``[[problem]]``
tables with ``function``, ``signature``, ``solution``). A prompt that names a problem's function
gets: ``<think>`` with a wrong first draft in a complete fenced block, sometimes an unclosed
(incomplete) block, then ``</think>`` and a final answer whose fenced block is the reference
solution (or, for a seeded minority, a wrong one). Other prompts get a generic thinking answer.

Token rule (documented for clients): text is cut into tokens by ``TOKEN_RE`` (a word with its
leading space, a run of punctuation, or a run of whitespace; ``<think>``/``</think>`` are single
tokens); prompts count ``ceil(len(text) / 4)`` tokens (see ``count_prompt_tokens``).
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

TOKEN_RE = re.compile(r"<think>|</think>| ?\w+| ?[^\w\s]+|\s+")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

FILLER = (
    " Let me also double-check the edge cases: empty input, a single element, and very large values."
    " The loop touches each element once, so the running time is linear and the extra memory is constant"
    " apart from the output. I should keep the function pure and avoid global state.\n"
)


@dataclass(frozen=True)
class Problem:
    id: str
    function: str
    signature: str
    solution: str


@dataclass(frozen=True)
class Answer:
    tokens: tuple[str, ...]
    think_end: int            # index of the first token after </think> (0 when there is no thinking)
    problem: str | None       # problem id, or None for a generic answer
    correct: bool | None      # whether the final solution is the reference one


def load_problems(path: Path) -> tuple[Problem, ...]:
    """Every problem in the TOML file; a missing or broken file gives none (generic answers only)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return ()
    out = []
    for item in data.get("problem", []):
        fn = item.get("function") or item.get("id")
        sol = item.get("solution")
        if not fn or not sol:
            continue
        out.append(Problem(item.get("id", fn), fn, item.get("signature", f"def {fn}(*args):"), sol.strip("\n")))
    return tuple(out)


def tokenize(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


def count_prompt_tokens(text: str) -> int:
    """Prompt length in tokens: one token per 4 characters, at least 1."""
    return max(1, math.ceil(len(text) / 4))


def request_rng(seed: int, prompt: str, salt: int) -> random.Random:
    digest = hashlib.blake2b(f"{seed}\0{salt}\0{prompt}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def wrong_version(solution: str) -> str:
    """A plausible but wrong variant: the last return gives None."""
    lines = solution.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        stripped = lines[i].lstrip()
        if stripped.startswith("return"):
            indent = lines[i][: len(lines[i]) - len(stripped)]
            lines[i] = f"{indent}return None  # TODO: handle the general case"
            return "\n".join(lines)
    return "\n".join(lines + ["    return None"])


def find_problem(problems: tuple[Problem, ...], prompt: str) -> Problem | None:
    for p in problems:
        if re.search(rf"\b{re.escape(p.function)}\b", prompt):
            return p
    return None


def compose(problems: tuple[Problem, ...], prompt: str, rng: random.Random, wrong_rate: float,
            thinking: bool = True) -> Answer:
    problem = find_problem(problems, prompt)
    if problem is None:
        think = ("\nThe user wants a clear, short answer. I will restate the question, list the key points,"
                 " and give one concrete example.\n" + FILLER)
        final = ("\n\nHere is a short answer.\n\n1. Identify what is asked.\n2. Work through one example.\n"
                 "3. Summarise the result and its limits.\n\nThat covers the main points.")
        correct = None
    else:
        draft = wrong_version(problem.solution)
        first_lines = problem.solution.splitlines()
        partial = "\n".join(first_lines[: max(2, len(first_lines) // 2)])
        think = (f"\nI need to write `{problem.signature}`. A first attempt:\n\n```python\n{draft}\n```\n\n"
                 "Wait, that returns None in the general case, which is wrong. Let me redo the core step.\n")
        if rng.random() < 0.5:
            think += f"\n```python\n{partial}\n"
            think += "\nHmm, rather than patch this piece by piece, let me write it out properly.\n"
        think += FILLER
        correct = rng.random() >= wrong_rate
        code = problem.solution if correct else wrong_version(problem.solution)
        final = (f"\n\nHere is the implementation of `{problem.function}`:\n\n```python\n{code}\n```\n\n"
                 "It handles the edge cases and runs in linear time.")
    if thinking:
        tokens = [THINK_OPEN, *tokenize(think), THINK_CLOSE]
        think_end = len(tokens)
    else:
        tokens, think_end = [], 0
    tokens += tokenize(final.lstrip("\n") if not thinking else final)
    return Answer(tuple(tokens), think_end, problem.id if problem else None, correct)


DIVERGED = " Alternatively"


def diverge(tokens: tuple[str, ...], seed: int, prompt: str, rate: float, limit: int) -> int | None:
    """The answer a lossy speculative server gives: for a share ``rate`` of prompts (chosen by
    ``seed`` and the prompt, so a prompt always does the same), the tokens from one position on
    (within the first ``limit``) differ from the greedy answer: the position where ``DIVERGED``
    is to be inserted, or None for a prompt answered losslessly."""
    if rate <= 0 or not tokens:
        return None
    rng = request_rng(seed, "diverge\0" + prompt, 0)
    if rng.random() >= rate:
        return None
    return rng.randrange(max(1, min(len(tokens), limit)))


def filler_tokens() -> tuple[str, ...]:
    """Tokens appended, in a loop, after the answer when a request sets ignore_eos."""
    return tuple(tokenize(FILLER))

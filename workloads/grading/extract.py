"""Pick the code to grade out of a model's answer. Pure functions, no I/O.

Rules (the contract of the coding eval):
1. Only the answer part counts: ``content`` when the server separated the reasoning; otherwise the
   text after the last ``</think>``; all of it when there is no thinking. Code inside the thinking is
   never graded (drafts and wrong attempts live there).
2. In the answer, the last complete fenced block (```python, ```py, ```python3 or bare ```) that
   defines the requested function; else the last complete such block; else the last complete
   block of any language that defines the function.
3. A response cut at max tokens (finish_reason "length") with no complete block in its answer is
   ``truncated``; any other response without one is ``no_code``.

The answer is the model's, so it may be made to be slow: every scan here is line by line with string
methods, linear in the answer, and an answer past ``MAX_ANSWER_CHARS`` is not scanned at all. (The
regular expression it replaced backtracked over long fence lines: a 12 KB answer held the
interpreter, and with it the event loop timing every stream, for a second.) Grading calls this from
a worker thread (workloads/grading/evaluate.py), never on the event loop.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

PYTHON_LANGS = frozenset({"python", "py", "python3", ""})
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
BLANKS = " \t"
FENCE_CHARS = ("`", "~")
LANG_CHARS = string.ascii_letters + string.digits + "_+.-"
MAX_ANSWER_CHARS = 1 << 19  # past any answer a sane max_tokens allows (~130k tokens); a longer one is not read


@dataclass(frozen=True)
class CodeBlock:
    lang: str
    code: str


@dataclass(frozen=True)
class Extraction:
    """``status`` is "ok" (``code`` is set), "no_code" or "truncated"."""

    status: str
    answer: str
    code: str | None
    detail: str


def answer_part(content: str | None, reasoning_content: str | None) -> str:
    """The text the model meant as its answer (see rule 1)."""
    text = content or ""
    if THINK_CLOSE in text:
        return text.rsplit(THINK_CLOSE, 1)[1]
    if reasoning_content is None and THINK_OPEN in text:
        # Inline thinking that never closed: everything is still thinking.
        return ""
    return text


def opening(line: str) -> tuple[str, int, str] | None:
    """(fence character, fence length, language) when ``line`` opens a block: blanks, three or more
    backticks or tildes, blanks, a language word, then anything but a backtick."""
    body = line.lstrip(BLANKS)
    char = body[:1]
    if char not in FENCE_CHARS:
        return None
    rest = body.lstrip(char)
    if len(body) - len(rest) < 3 or "`" in rest:
        return None
    info = rest.lstrip(BLANKS)
    return char, len(body) - len(rest), info[:len(info) - len(info.lstrip(LANG_CHARS))].lower()


def closes(line: str, char: str, length: int) -> bool:
    """``line`` closes a block opened by ``length`` of ``char``: blanks and at least as many of it."""
    body = line.strip(BLANKS)
    return len(body) >= length and not body.strip(char)


def fenced_blocks(text: str) -> tuple[list[CodeBlock], bool]:
    """Complete fenced blocks in order, and whether an unclosed fence trails the text. Only lines
    holding three fence characters in a row can open or close a block; each is looked at once."""
    blocks: list[CodeBlock] = []
    lines = text.split("\n")
    marked = iter([i for i, line in enumerate(lines) if "```" in line or "~~~" in line])
    for i in marked:
        found = opening(lines[i])
        if found is None:
            continue
        char, length, lang = found
        end = next((j for j in marked if closes(lines[j], char, length)), None)  # the same lines, on from i
        if end is None:
            return blocks, True
        blocks.append(CodeBlock(lang=lang, code="\n".join(lines[i + 1:end])))
    return blocks, False


def defines(code: str, function: str) -> bool:
    """A line of ``code`` starts ``def function(`` (or ``async def``), blanks allowed between the words."""
    for line in code.split("\n"):
        if "def" not in line:
            continue
        body = line.lstrip(BLANKS)
        if body.startswith("async"):
            after = body[5:].lstrip(BLANKS)
            body = after if len(after) < len(body) - 5 else body
        if not body.startswith("def"):
            continue
        name = body[3:].lstrip(BLANKS)
        if len(name) < len(body) - 3 and name.startswith(function) and name[len(function):].lstrip(BLANKS)[:1] == "(":
            return True
    return False


def pick_block(blocks: list[CodeBlock], function: str) -> CodeBlock | None:
    python = [b for b in blocks if b.lang in PYTHON_LANGS]
    for block in reversed(python):
        if defines(block.code, function):
            return block
    if python:
        return python[-1]
    for block in reversed(blocks):
        if defines(block.code, function):
            return block
    return None


def extract_code(content: str | None, reasoning_content: str | None, function: str,
                 finish_reason: str | None) -> Extraction:
    answer = answer_part(content, reasoning_content)
    if len(answer) > MAX_ANSWER_CHARS:
        why = f"the answer is {len(answer)} characters, more than the {MAX_ANSWER_CHARS} the grader reads"
        return Extraction("no_code", answer, None, why)
    blocks, unclosed = fenced_blocks(answer)
    block = pick_block(blocks, function)
    if block is not None:
        return Extraction("ok", answer, block.code, f"```{block.lang} block, {len(block.code.splitlines())} lines")
    if finish_reason == "length":
        where = "inside an unclosed code block" if unclosed else (
            "before the answer" if not answer.strip() else "before a complete code block")
        return Extraction("truncated", answer, None, f"cut at max tokens {where}")
    if not answer.strip():
        why = "empty answer (only thinking)" if (content or reasoning_content) else "empty response"
        return Extraction("no_code", answer, None, why)
    if unclosed:
        return Extraction("no_code", answer, None, "the answer's code block is never closed")
    return Extraction("no_code", answer, None, "no fenced code block in the answer")

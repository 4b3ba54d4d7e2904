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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PYTHON_LANGS = frozenset({"python", "py", "python3", ""})
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_OPEN_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*$")


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


def fenced_blocks(text: str) -> tuple[list[CodeBlock], bool]:
    """Complete fenced blocks in order, and whether an unclosed fence trails the text."""
    blocks: list[CodeBlock] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _OPEN_FENCE.match(lines[i])
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
        blocks.append(CodeBlock(lang=lang, code="\n".join(lines[i + 1:j])))
        i = j + 1
    return blocks, False


def defines(code: str, function: str) -> bool:
    return re.search(r"^[ \t]*(async[ \t]+)?def[ \t]+" + re.escape(function) + r"[ \t]*\(", code, re.M) is not None


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

"""Degenerate answers: output that loops. Pure.

An answer is degenerate when it holds a long run of one token (``and and and ...``, a character
repeated) or when few of its 4-grams are distinct (a sentence or a paragraph said over and over).
Greedy loops are easy to draft, so they read as high acceptance and tok/s on useless output (a false
win, SwiftLM#88, z-lab/dflash#91): the bench counts them, shows them and leaves them out of the cell's
acceptance unless asked (``include_degenerate``). Tokens here are words and runs of punctuation, not
the model's tokens: the test is on the text, as a reader would see the loop.
"""

from __future__ import annotations

import re

RUN = 24            # this many copies of one token in a row is a loop
MIN_TOKENS = 64     # the distinct-4-gram test needs at least this many tokens
MIN_DISTINCT = 0.4  # below this share of distinct 4-grams the text repeats itself
MAX_CHARS = 256 * 1024  # the tail looked at: a loop runs to the end; the check runs on bench's event loop
_TOKEN = re.compile(r"\w+|[^\w\s]+")
_BLANK_RUN = re.compile(r"(?<!\s)\s{256}")  # tried only where a run of blanks begins: linear, no backtracking


def degenerate(text: str) -> str | None:
    """Why ``text`` is degenerate (one line), or None when it is not. Only its last ``MAX_CHARS``
    characters are read, so a hostile or runaway answer costs bench's event loop a bounded time."""
    text = text[-MAX_CHARS:]
    if _BLANK_RUN.search(text):
        return "a run of 256+ blank characters"
    tokens = _TOKEN.findall(text)
    run, longest, token = 1, 1, ""
    for prev, cur in zip(tokens, tokens[1:], strict=False):
        run = run + 1 if cur == prev else 1
        if run > longest:
            longest, token = run, cur
    if longest >= RUN:
        return f"{longest} x {token[:20]!r} in a row"
    if len(tokens) >= MIN_TOKENS:
        grams = [tuple(tokens[i:i + 4]) for i in range(len(tokens) - 3)]
        share = len(set(grams)) / len(grams)
        if share < MIN_DISTINCT:
            return f"only {share:.0%} of its 4-grams distinct"
    return None

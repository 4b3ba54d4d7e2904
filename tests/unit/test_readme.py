"""The README's headless examples work as written after its install command (issue 12, item 7):
`ddtune` lives in .venv/bin, so the examples say how to reach it, and each names a real command."""

from __future__ import annotations

import re

from tests.helpers import REPO
from tui.cli import COMMANDS


def headless_section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## A tuning session, headless")
    return text[start:text.index("\n## ", start + 1)]


def test_headless_examples_say_how_to_reach_ddtune():
    section = headless_section()
    install = (REPO / "README.md").read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    assert "python3 -m venv .venv" in install and ".venv/bin/pip install" in install  # not on PATH
    prose, block = section.split("```sh\n", 1)
    assert ". .venv/bin/activate" in prose and ".venv/bin/ddtune" in prose
    first = block.splitlines()[0]
    assert first.startswith(". .venv/bin/activate")  # the block itself starts by activating


def test_every_headless_example_is_a_real_command():
    block = headless_section().split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.startswith("ddtune ")]
    assert len(commands) >= 5
    for line in commands:
        name = re.match(r"ddtune ([\w-]+)", line).group(1)
        assert name in COMMANDS, line

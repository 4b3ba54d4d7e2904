"""The built-in coding problems (presets/problems/coding.toml), loaded as frozen data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from backends.core import read_toml
from backends.core import ConfigError, UsageError
from backends.core import expect, key_name, shown
from backends.core import problems_file
from workloads.grading.checks import SHAPE_HINT, parse_test

ANSWER_INSTRUCTION = (
    "Answer with the complete function in one ```python fenced code block. "
    "Use only the Python standard library."
)


@dataclass(frozen=True)
class Problem:
    id: str
    function: str
    signature: str
    prompt: str
    solution: str
    tests: tuple[str, ...]

    def chat_prompt(self) -> str:
        """What the eval sends as the user message."""
        return f"{self.prompt}\n\nSignature: `{self.signature}`\n\n{ANSWER_INSTRUCTION}"


@overload
def _field(raw: dict, name: str, path: Path, index: int, required: Literal[True] = True) -> str: ...
@overload
def _field(raw: dict, name: str, path: Path, index: int, required: bool) -> str | None: ...
def _field(raw: dict, name: str, path: Path, index: int, required: bool = True) -> str | None:
    where = f"problem #{index + 1} ({shown(raw.get('id', '?'))}): field '{name}'"
    if name not in raw and not required:
        return None
    value = expect(str(path), where, raw.get(name), str, "see the schema in the file's header")
    if not value.strip():
        raise ConfigError(f"{path}: {where}: must be a non-empty string", hint="see the schema in the file's header")
    return value


def load_problems(path: Path | str | None = None) -> tuple[Problem, ...]:
    """The problems of ``path``, by default the built-in ones (backends.core.paths.problems_file)."""
    path = Path(path) if path is not None else problems_file()
    data = read_toml(path)
    entries = expect(str(path), "problem", data.get("problem", []), list, "write each problem as a [[problem]] table")
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, raw in enumerate(entries):
        expect(str(path), f"problem #{index + 1}", raw, dict, "write each problem as a [[problem]] table")
        pid = _field(raw, "id", path, index)
        if pid in seen:
            raise ConfigError(f"{path}: duplicate problem id {key_name(pid)}", hint="ids must be unique")
        seen.add(pid)
        tests = expect(str(path), f"problem {key_name(pid)}: field 'tests'", raw.get("tests"), list,
                       'tests = ["f(1) == 2"]')
        if not tests:
            raise ConfigError(f"{path}: problem {key_name(pid)}: field 'tests' is empty", hint='tests = ["f(1) == 2"]')
        function = _field(raw, "function", path, index, required=False) or pid
        for i, test in enumerate(tests):
            expect(str(path), f"problem {key_name(pid)}: tests[{i}]", test, str, 'tests = ["f(1) == 2"]')
            try:
                parse_test(test, function)
            except ValueError as exc:
                raise ConfigError(f"{path}: problem {key_name(pid)}: tests[{i}] ({shown(test)}): {exc}",
                                  hint=SHAPE_HINT) from None
        problems.append(Problem(
            id=pid,
            function=function,
            signature=_field(raw, "signature", path, index),
            prompt=_field(raw, "prompt", path, index),
            solution=_field(raw, "solution", path, index),
            tests=tuple(tests),
        ))
    if not problems:
        raise ConfigError(f"{path}: no [[problem]] entries", hint="add [[problem]] tables (see the file's header)")
    return tuple(problems)


def select_problems(problems: tuple[Problem, ...], ids: list[str] | None) -> tuple[Problem, ...]:
    """The problems named by ``ids`` (in that order), or all of them. Unknown ids are a usage error."""
    if not ids:
        return problems
    by_id = {p.id: p for p in problems}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise UsageError(f"--problems: unknown problem id(s): {', '.join(unknown)}",
                         hint=f"known ids: {', '.join(sorted(by_id))}")
    return tuple(by_id[i] for i in ids)

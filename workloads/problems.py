"""The built-in coding problems (presets/problems/coding.toml), loaded as frozen data."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from backends.errors import ConfigError, UsageError
from backends.paths import PROBLEMS_FILE
from workloads.checks import SHAPE_HINT, parse_test

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


def _field(raw: dict, name: str, path: Path, index: int) -> str:
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: problem #{index + 1} ({raw.get('id', '?')}): field '{name}' must be a non-empty string",
                          hint="see the schema in the file's header")
    return value


def load_problems(path: Path | str = PROBLEMS_FILE) -> tuple[Problem, ...]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read problems file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, raw in enumerate(data.get("problem", [])):
        pid = _field(raw, "id", path, index)
        if pid in seen:
            raise ConfigError(f"{path}: duplicate problem id '{pid}'", hint="ids must be unique")
        seen.add(pid)
        tests = raw.get("tests")
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
            raise ConfigError(f"{path}: problem '{pid}': field 'tests' must be a non-empty list of strings")
        function = raw.get("function") or pid
        for n, test in enumerate(tests, 1):
            try:
                parse_test(test, function)
            except ValueError as exc:
                raise ConfigError(f"{path}: problem '{pid}': test {n} ({test}): {exc}", hint=SHAPE_HINT) from None
        problems.append(Problem(
            id=pid,
            function=function,
            signature=_field(raw, "signature", path, index),
            prompt=_field(raw, "prompt", path, index),
            solution=_field(raw, "solution", path, index),
            tests=tuple(tests),
        ))
    if not problems:
        raise ConfigError(f"{path}: no [[problem]] entries")
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

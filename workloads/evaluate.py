"""Grade model answers to the coding problems: extract the answer's code, run the hidden tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from backends.errors import UsageError
from workloads.extract import extract_code
from workloads.problems import Problem
from workloads.sandbox import SandboxLimits, run_tests

VERDICTS = ("pass", "fail", "error", "timeout", "no_code", "truncated")


@dataclass(frozen=True)
class RawResponse:
    """One saved model answer: what regrading needs and nothing else."""

    problem: str
    content: str | None
    reasoning_content: str | None
    finish_reason: str | None


@dataclass(frozen=True)
class Grade:
    problem: str
    verdict: str
    detail: str
    code: str | None = None

    def to_json(self) -> dict:
        return {"problem": self.problem, "verdict": self.verdict, "detail": self.detail}


def grade_response(problem: Problem, response: RawResponse, limits: SandboxLimits = SandboxLimits()) -> Grade:
    """Blocking (runs the sandbox): the verdict for one answer."""
    extraction = extract_code(response.content, response.reasoning_content, problem.function,
                              response.finish_reason)
    if extraction.status != "ok" or extraction.code is None:
        return Grade(problem.id, extraction.status, extraction.detail)
    result = run_tests(extraction.code, problem.function, problem.tests, limits)
    return Grade(problem.id, result.verdict, result.detail, extraction.code)


async def grade_async(problem: Problem, response: RawResponse, limits: SandboxLimits = SandboxLimits(),
                      gate: asyncio.Semaphore | None = None) -> Grade:
    """Grade off the event loop; ``gate`` bounds how many sandboxes run at once."""
    if gate is None:
        return await asyncio.to_thread(grade_response, problem, response, limits)
    async with gate:
        return await asyncio.to_thread(grade_response, problem, response, limits)


def summarize(grades: list[Grade]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for grade in grades:
        counts[grade.verdict] = counts.get(grade.verdict, 0) + 1
    return counts


def read_responses(path: Path | str) -> list[RawResponse]:
    """JSONL of ``{"problem", "content", "reasoning_content", "finish_reason"}`` (extra keys ignored)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--regrade: cannot read {path}: {exc.strerror}", hint="give a responses.jsonl file") from exc
    records: list[RawResponse] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"--regrade: {path} line {lineno}: not JSON ({exc.msg})",
                             hint="each line must be one JSON object") from exc
        if not isinstance(raw, dict) or not isinstance(raw.get("problem"), str):
            raise UsageError(f"--regrade: {path} line {lineno}: field 'problem' must be a string id")
        for key in ("content", "reasoning_content", "finish_reason"):
            if raw.get(key) is not None and not isinstance(raw[key], str):
                raise UsageError(f"--regrade: {path} line {lineno}: field '{key}' must be a string or null")
        records.append(RawResponse(raw["problem"], raw.get("content"), raw.get("reasoning_content"),
                                   raw.get("finish_reason")))
    return records


async def regrade(records: list[RawResponse], problems: tuple[Problem, ...], parallel: int = 2,
                  limits: SandboxLimits = SandboxLimits()) -> list[Grade]:
    """Grades in input order. Unknown problem ids are a usage error naming them."""
    by_id = {p.id: p for p in problems}
    unknown = sorted({r.problem for r in records if r.problem not in by_id})
    if unknown:
        raise UsageError(f"--regrade: unknown problem id(s): {', '.join(unknown)}",
                         hint="the file must come from this problem set (presets/problems/coding.toml)")
    gate = asyncio.Semaphore(max(1, parallel))
    return list(await asyncio.gather(*(grade_async(by_id[r.problem], r, limits, gate) for r in records)))

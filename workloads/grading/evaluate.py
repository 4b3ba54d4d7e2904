"""Grade model answers to the coding problems: extract the answer's code, run the hidden tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from backends.core.datafile import loads
from backends.core.errors import UsageError
from workloads.grading.extract import extract_code
from workloads.grading.problems import Problem
from workloads.runs.store import attempt_of, kept_filter
from workloads.grading.sandbox import SandboxLimits, run_tests

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


@dataclass(frozen=True)
class ResponseFile:
    """The answers ``--regrade`` grades from one responses file, and what it left out and why."""

    records: list[RawResponse]
    non_coding: int = 0          # answers to plain bench prompts: no problem, nothing to grade
    not_kept: int = 0            # answers of attempts whose cell or problem result was not kept
    torn_line: int | None = None  # a torn last line (the writer was killed mid-line), skipped


def _lines(path: Path) -> tuple[list[tuple[int, dict]], int | None]:
    """(line number, object) per line, and the number of a torn last line, left out; anything else
    unreadable is a usage error naming the line."""
    hint = "each line must be one JSON object, as in the responses.jsonl a run wrote"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--regrade: cannot read {path}: {exc.strerror}", hint="give a responses.jsonl file") from exc
    lines = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    out: list[tuple[int, dict]] = []
    torn = None
    for i, (lineno, line) in enumerate(lines):
        try:
            value = loads(line.decode("utf-8"))
        except ValueError as exc:  # not UTF-8, not JSON, or nested too deep
            if i == len(lines) - 1 and line.lstrip().startswith(b"{"):
                torn = lineno  # writers write whole objects: a cut one is a kill mid-write
                break
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else exc
            why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"not JSON ({msg})"
            raise UsageError(f"--regrade: {path} line {lineno}: {why}", hint=hint) from None
        if not isinstance(value, dict):
            raise UsageError(f"--regrade: {path} line {lineno}: not a JSON object", hint=hint)
        out.append((lineno, value))
    return out, torn


def read_responses(path: Path | str) -> ResponseFile:
    """JSONL of ``{"problem", "content", "reasoning_content", "finish_reason"}`` (extra keys ignored).

    Inside a run directory only the answers of kept results count (results.kept_filter): a cell or
    problem that a killed attempt left half done was redone by the next one. ``"problem": null``
    marks a plain bench prompt, skipped."""
    path = Path(path)
    lines, torn = _lines(path)
    kept = kept_filter(path.parent)
    attempts = {attempt_of(raw, f"--regrade: {path} line {lineno}") for lineno, raw in lines}
    if kept is None and len(attempts) > 1:
        raise UsageError(f"--regrade: {path} holds answers of {len(attempts)} attempts of a run and no run.json "
                         "beside it says which were kept", hint="regrade the responses.jsonl inside its run directory")
    records: list[RawResponse] = []
    non_coding = not_kept = 0
    for lineno, raw in lines:
        if kept is not None and not kept(raw):
            not_kept += 1
            continue
        if "problem" in raw and raw["problem"] is None:
            non_coding += 1
            continue
        if not isinstance(raw.get("problem"), str):
            raise UsageError(f"--regrade: {path} line {lineno}: field 'problem' must be a string id")
        for key in ("content", "reasoning_content", "finish_reason"):
            if raw.get(key) is not None and not isinstance(raw[key], str):
                raise UsageError(f"--regrade: {path} line {lineno}: field '{key}' must be a string or null")
        records.append(RawResponse(raw["problem"], raw.get("content"), raw.get("reasoning_content"),
                                   raw.get("finish_reason")))
    return ResponseFile(records, non_coding, not_kept, torn)


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

"""Grade model answers to the coding problems: extract the answer's code, run the hidden tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from backends.core import Lines, loads
from backends.core import UsageError
from workloads.grading.extract import extract_code
from workloads.grading.problems import Problem
from workloads.runs.checks import VERDICTS as CHECKED_VERDICTS
from workloads.runs.store import attempt_of, kept_filter
from workloads.grading.sandbox import SandboxLimits, run_tests

VERDICTS = CHECKED_VERDICTS  # one list: what a results.jsonl record may say (workloads.runs.checks)


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
    long_note: str | None = None  # lines over the length limit, skipped: what the user is told


_HINT = "each line must be one JSON object, as in the responses.jsonl a run wrote"


def _lines(path: Path) -> tuple[list[tuple[int, dict]], int | None, str | None]:
    """(line number, object) per line, the number of a torn last line (left out), and the note on
    lines skipped for their length. Streamed: the file is never held whole. Anything else unreadable
    is a usage error naming the line."""
    lines = Lines(path, UsageError, f"--regrade: {path}", "give a responses.jsonl file")
    out: list[tuple[int, dict]] = []
    failed: tuple[int, bytes, ValueError] | None = None  # the latest bad line: fatal unless it is the last
    for lineno, line in lines:
        if not line.strip():
            continue
        if failed is not None:
            _refuse(path, *failed)
        try:
            value = loads(line.decode("utf-8"))
        except ValueError as exc:  # not UTF-8, not JSON, or nested too deep
            failed = (lineno, line, exc)
            continue
        if not isinstance(value, dict):
            raise UsageError(f"--regrade: {path} line {lineno}: not a JSON object", hint=_HINT)
        out.append((lineno, value))
    torn = None
    if failed is not None:
        if not failed[1].lstrip().startswith(b"{"):
            _refuse(path, *failed)
        torn = failed[0]  # writers write whole objects: a cut last one is a kill mid-write
    return out, torn, lines.note()


def _refuse(path: Path, lineno: int, line: bytes, exc: ValueError) -> NoReturn:
    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else exc
    why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"not JSON ({msg})"
    raise UsageError(f"--regrade: {path} line {lineno}: {why}", hint=_HINT)


def read_responses(path: Path | str) -> ResponseFile:
    """JSONL of ``{"problem", "content", "reasoning_content", "finish_reason"}`` (extra keys ignored).

    Inside a run directory only the answers of kept results count (results.kept_filter): a cell or
    problem that a killed attempt left half done was redone by the next one. ``"problem": null``
    marks a plain bench prompt, skipped."""
    path = Path(path)
    lines, torn, long_note = _lines(path)
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
    return ResponseFile(records, non_coding, not_kept, torn, long_note)


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

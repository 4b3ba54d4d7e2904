"""``ddtune eval`` as one call: ``run_eval(EvalSpec(...), on_event) -> EvalOutcome``.

Ask a server every problem (or continue a run with ``resume``), or grade saved answers again
offline (``regrade``: a responses.jsonl); either way the grades come back typed, each one reported
as ``ProblemGraded`` when it is known, and ``out`` (checked before anything is asked) gets the
document ``--json`` prints. The command line only parses into the spec and prints the outcome.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass

from backends.core import UsageError
from backends.core import check_output, write_atomic
from workloads.grading import eval_runner
from workloads.grading.evaluate import Grade, read_responses, regrade, summarize
from workloads.grading.problems import load_problems


@dataclass(frozen=True)
class EvalSpec:
    url: str | None = None            # the server (None with regrade)
    api_key: str | None = None
    problems: tuple[str, ...] | None = None  # ids; None: all
    max_tokens: int = 4096
    concurrency: int = 4
    resume: str | None = None         # a run directory, or "latest"
    regrade: str | None = None        # saved answers (JSONL) to grade again; needs no server
    out: str | None = None            # also write the document here


@dataclass(frozen=True)
class ProblemGraded:
    done: int
    total: int
    grade: Grade


@dataclass(frozen=True)
class RegradeSkipped:
    non_coding: int        # plain bench answers ("problem": null)
    not_kept: int          # answers of attempts whose cell or problem was not kept
    torn_last_line: int | None


@dataclass(frozen=True)
class EvalOutcome:
    results: tuple[Grade, ...]        # in problem order (a regrade: in input order)
    summary: dict[str, int]           # verdict -> count
    run_dir: str | None = None        # the run asked (None for a regrade)
    skipped: RegradeSkipped | None = None   # a regrade's answers left out
    notes: tuple[str, ...] = ()       # what a regrade read past (a torn last line, long lines)

    def to_json(self) -> dict:
        """The document ``ddtune eval --json`` prints (the same keys as ever)."""
        doc: dict = {"results": [g.to_json() for g in self.results], "summary": self.summary}
        if self.skipped is not None:
            doc["skipped"] = {"non_coding": self.skipped.non_coding, "not_kept": self.skipped.not_kept,
                              "torn_last_line": self.skipped.torn_last_line}
        else:
            doc["run_dir"] = self.run_dir
        return doc


def run_eval(spec: EvalSpec, on_event: Callable[[ProblemGraded], object] | None = None) -> EvalOutcome:
    """Run the eval the spec asks for (blocking; Ctrl-C leaves a resumable run). UsageError for a
    spec that does not go together, before anything is asked."""
    if spec.out:
        check_output(spec.out)  # refused now (a link, another user's folder), not after the grading
    if spec.regrade:
        outcome = _regrade(spec)
    else:
        if spec.url is None:
            raise UsageError("no server to ask", hint="give --url, or --regrade FILE to grade saved answers")

        def progress(done: int, total: int, grade: Grade) -> None:
            if on_event is not None:
                on_event(ProblemGraded(done, total, grade))

        doc = asyncio.run(eval_runner.run_eval(spec.url, api_key=spec.api_key,
                                               problem_ids=list(spec.problems or ()) or None,
                                               max_tokens=spec.max_tokens, concurrency=spec.concurrency,
                                               progress=progress, resume=spec.resume))
        grades = tuple(Grade(r["problem"], r["verdict"], r["detail"]) for r in doc["results"])
        outcome = EvalOutcome(grades, doc["summary"], doc["run_dir"])
    if spec.out:
        write_atomic(spec.out, json.dumps(outcome.to_json(), indent=2) + "\n")
    return outcome


def _regrade(spec: EvalSpec) -> EvalOutcome:
    if spec.resume:
        raise UsageError("--regrade and --resume do not go together",
                         hint="--regrade grades saved answers offline; --resume asks the server again")
    assert spec.regrade is not None
    found = read_responses(spec.regrade)
    notes = []
    if found.torn_line is not None:
        notes.append(f"{spec.regrade}: skipped a torn last line (line {found.torn_line}): the run was interrupted "
                     "while writing it")
    if found.long_note is not None:
        notes.append(found.long_note)
    grades = asyncio.run(regrade(found.records, load_problems()))
    return EvalOutcome(tuple(grades), summarize(grades), None,
                       RegradeSkipped(found.non_coding, found.not_kept, found.torn_line), tuple(notes))

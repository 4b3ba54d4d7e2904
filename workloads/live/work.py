"""What the live load sends: a prompt set's records (all, or those named), and the coding problems
that grade the built-in set's answers. One way for ``ddtune load`` and the console's load worker."""

from __future__ import annotations

from dataclasses import dataclass

from backends.core import UsageError
from workloads.grading.problems import Problem, load_problems
from workloads.grading.sandbox_isolation import isolation
from workloads.prompts.records import PromptRecord, PromptSet
from workloads.prompts.sources import load_source

DEFAULT = "coding"  # the console's load: the coding problems, graded


@dataclass(frozen=True)
class LoadWork:
    prompts: PromptSet
    records: tuple[PromptRecord, ...]
    problems: tuple[Problem, ...]   # graders of the records that are coding problems

    @property
    def name(self) -> str:
        return self.prompts.name


def load_work(source: str | None, ids: list[str] | tuple[str, ...] | None = None) -> LoadWork:
    """The set SOURCE names (default: coding), less the records ``ids`` leaves out (in that order).
    UsageError naming an unknown id or a bad source; ConfigError where graded answers cannot be
    sandboxed here (no bubblewrap), before anything is sent."""
    prompts = load_source(source or DEFAULT)
    records = prompts.records
    if ids:
        by_id = {r.id: r for r in records}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            shown = ", ".join(sorted(by_id)[:20]) + (" ..." if len(by_id) > 20 else "")
            raise UsageError(f"--problems: unknown id(s) in {prompts.name}: {', '.join(unknown)}",
                             hint=f"known ids: {shown}")
        records = tuple(by_id[i] for i in ids)
    if prompts.graded:
        isolation()  # ddtune grades only inside bubblewrap: without it, say so before the load starts
    return LoadWork(prompts, records, load_problems() if prompts.graded else ())

"""The prompt sources the console's live load can send: the built-in sets, each with its one line of
help, and any source (a set's name, a JSON/JSONL file, hf:NAME) checked as the load would read it,
before the console opens or the picker switches the load to it."""

from __future__ import annotations

from dataclasses import dataclass

from backends.core import DdtuneError
from workloads.live.work import load_work
from workloads.prompts.records import PromptSet
from workloads.prompts.sources import BUILTIN_HELP


@dataclass(frozen=True)
class LoadSources:
    builtins: dict[str, str]  # a built-in set's name -> its one line of help

    def read(self, source: str) -> PromptSet:
        """``source`` read as the load reads it (blocking): DdtuneError naming what is wrong with it."""
        return load_work(source).prompts

    def problem(self, source: str) -> str | None:
        """Why the load could not send ``source``, in one line (with the fix); None when it can."""
        try:
            self.read(source)
        except DdtuneError as exc:
            return exc.message + (f" ({exc.hint})" if exc.hint else "")
        return None


def load_sources() -> LoadSources:
    return LoadSources(BUILTIN_HELP)

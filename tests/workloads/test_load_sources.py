"""The console's prompt sources (workloads.live.load_sources): the built-in sets with their help, and a
source checked as the load reads it, before the console opens or the picker switches to it."""

from __future__ import annotations

import json

import pytest

from backends.core import DdtuneError
from workloads.live import load_sources


def test_a_source_is_read_as_the_load_reads_it_and_a_bad_one_is_one_line(tmp_path):
    sources = load_sources()
    assert "coding" in sources.builtins and all(sources.builtins.values())
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"prompt": "Define throughput."}) + "\n{not json\n")
    read = sources.read(str(mine))
    assert len(read.records) == 1 and len(read.skipped) == 1  # the console says the skipped line first
    assert sources.problem(str(mine)) is None
    missing = str(tmp_path / "missing.jsonl")
    with pytest.raises(DdtuneError) as caught:
        sources.read(missing)
    problem = sources.problem(missing)
    assert problem is not None and problem.startswith(caught.value.message) and "no such file" in problem
    assert "\n" not in problem

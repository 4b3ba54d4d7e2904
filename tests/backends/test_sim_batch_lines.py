"""The simulator's ``Decode batch`` / ``Prefill batch`` lines, per ``--sim-version``, against the shapes of
the real server: the format strings of the 0.5.19 and 0.5.23 wheels (tests/data/real/<v>/
batch_log_format.toml, through tests/batchlines.py) with the branches a single-GPU DFLASH (or plain)
server takes, with and without SGLANG_LOG_FORWARD_ITERS; and 0.5.17's recorded lines
(tests/data/real/0.5.17/logs). Shapes, not values: every key, in order, and each value's form."""

from __future__ import annotations

import re

import httpx
import pytest

from backends.logs.events import DecodeBatch
from backends.logs.parse import parse_line
from tests.batchlines import REAL, VERSIONS, shape
from tests.simproc import launch

SPEC = ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "draft",
        "--speculative-draft-window-size", "512")
BASE = ("--context-length", "8192", "--sim-step-ms", "0", "--decode-log-interval", "10")
BODY = {"model": "default", "messages": [{"role": "user", "content": "Write a Python function fib(n)."}],
        "max_tokens": 64, "temperature": 0}
BATCH = re.compile(r"(?:Decode|Prefill) batch\b.*")


def batch_lines(version: str, tmp_path, spec: bool, iters: bool) -> list[str]:
    env = {"SGLANG_LOG_FORWARD_ITERS": "1"} if iters else {}
    sim = launch("--sim-version", version, *(SPEC if spec else ()), *BASE, log_dir=tmp_path, env=env)
    try:
        for _ in range(2):
            assert httpx.post(sim.url + "/v1/chat/completions", json=BODY, timeout=30).status_code == 200
        text = sim.text()
    finally:
        sim.kill_group()
    return [m.group(0).rstrip() for m in BATCH.finditer(text)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("spec", "iters"), [(True, True), (False, False)], ids=["dflash-iters", "plain"])
def test_batch_lines_have_the_shape_of_the_source(version, spec, iters, tmp_path):
    on = frozenset({"spec"} if spec else ()) | frozenset({"iter"} if iters else ())
    lines = batch_lines(version, tmp_path, spec, iters)
    decode = [x for x in lines if x.startswith("Decode")]
    prefill = [x for x in lines if x.startswith("Prefill")]
    assert decode and prefill, lines
    for kind, found in (("decode", decode), ("prefill", prefill)):
        rx = shape(version, kind, on)
        bad = [x for x in found if not rx.fullmatch(x)]
        assert not bad, (kind, rx.pattern, bad)
    events = [parse_line(x) for x in decode]
    assert all(isinstance(e, DecodeBatch) for e in events)
    assert all((e.forward_iter is not None) == iters for e in events if isinstance(e, DecodeBatch))


def _recorded_shape(line: str) -> str:
    return re.sub(r"-?\d+(?:\.\d+)?", "#", line)


def test_0517_batch_lines_have_the_recorded_shape(tmp_path):
    recorded = {_recorded_shape(m.group(0).rstrip())
                for path in (REAL / "0.5.17" / "logs").glob("*.log")
                for m in BATCH.finditer(path.read_text(errors="replace"))}
    assert any(x.startswith("Decode batch, ") for x in recorded)
    mine = {_recorded_shape(x) for x in batch_lines("0.5.17", tmp_path, spec=True, iters=False)}
    assert mine and mine <= recorded, sorted(mine - recorded)

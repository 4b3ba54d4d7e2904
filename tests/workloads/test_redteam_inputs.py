"""Red team, round 3: absurd numbers where a user (or a prompt file from anywhere) gives them, through
the real CLI as root. Held here: every integer and rate option is bounded as a plan read back for a
resume is (workloads/runs/checks.py PLAUSIBLE), so ``--max-tokens`` of 400 digits is one line, not an
OverflowError traceback, and ``load --concurrency`` of 400 digits is one line, not 24 GB and the OOM
killer; a prompt record's own output length is bounded the same way (10**400 overflowed the stream's
bounds, 2**63 voided them); a JSON array of prompts is read in one pass (each element's line was
counted from the top of the file: a 1.4 MB array took 37 s, a dataset's hundreds of MB for ever)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import free_port, run_ddtune
from workloads.prompts import files

BIG = "1" + "0" * 400
SMALL = ("--contexts", "0", "--concurrency", "1", "--requests-per-cell", "1", "--warmup", "0", "--max-tokens", "8")


def one_error(out) -> str:
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    (line,) = [x for x in out.stderr.splitlines() if "error:" in x]
    return line


@pytest.mark.parametrize(("argv", "says"), [
    (["bench", "--max-tokens", BIG], "argument --max-tokens: must be from 1 to 100,000,000, got 1000"),
    (["eval", "--max-tokens", BIG], "argument --max-tokens: must be from 1 to 100,000,000"),
    (["load", "--concurrency", BIG, "--duration", "1"], "argument --concurrency: must be from 1 to 100,000"),
    (["eval", "--concurrency", "100001"], "argument --concurrency: must be from 1 to 100,000, got 100001"),
    (["bench", "--request-rate", "inf"], "argument --request-rate: must be from 1e-09 to 1e+09, got inf"),
    (["bench", "--request-rate", "1e-300", "--burstiness", "1e-300"], "argument --request-rate: must be from"),
    (["bench", "--request-rate", "1", "--burstiness", "1e308"], "argument --burstiness: must be from 1e-09"),
    (["sweep", "b8-t4-w2048", "--repeats", BIG], "argument --repeats: must be from 1 to 100,000"),
    (["search", "--space", "budget=4,8", "--rungs", "101"], "argument --rungs: must be from 1 to 100, got 101"),
    (["bench", "--seed", str(2**63)], "argument --seed: must be from 0 to 9,223,372,036,854,775,807"),
])
def test_an_absurd_number_on_the_command_line_is_one_line(tmp_path, state_dir, argv, says):
    """Refused by the option's type, before any server is asked (nothing listens at the URL)."""
    url = ["--url", f"http://127.0.0.1:{free_port()}"] if argv[0] in ("bench", "eval", "load") else []
    line = one_error(run_ddtune(*argv, *url, timeout=60))
    assert says in line and len(line) < 200, line


def test_a_prompt_record_with_an_absurd_output_length_is_skipped_and_the_rest_is_sent(tmp_path, state_dir,
                                                                                       start_sim):
    sim = start_sim()
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join([f'{{"id": "huge", "prompt": "Say hi.", "max_tokens": {BIG}}}',
                               json.dumps({"id": "past", "prompt": "Say hi.", "output_tokens": 2**63}),
                               json.dumps({"id": "fine", "prompt": "Say hello.", "max_tokens": 6})]) + "\n")
    out = run_ddtune("bench", "--url", sim.url, "--prompts", str(path), *SMALL, "--json", timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    skipped = [x for x in out.stderr.splitlines() if "record skipped" in x]
    assert len(skipped) == 2, out.stderr
    assert "line 1: field 'max_tokens': expected a whole number from 1 to 100,000,000, got an integer of" in skipped[0]
    assert "line 2: field 'output_tokens'" in skipped[1] and "got 9223372036854775808" in skipped[1]
    run_dir = Path(json.loads(out.stdout)["run"]["dir"])
    sent = [json.loads(line) for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    assert [r["record"] for r in sent] == ["fine"] and sent[0]["output_tokens"] <= 6


class Counting(str):
    """A text that notes how many characters each ``count`` call scans."""

    scanned: list[int]

    def count(self, sub, start=0, end=None):  # type: ignore[override]
        self.scanned.append((len(self) if end is None else end) - start)
        return super().count(sub, start, end)


def test_a_json_array_of_prompts_is_scanned_once_for_its_line_numbers(tmp_path):
    records = [{"id": f"q{i}", "prompt": f"Question {i}?"} for i in range(3000)]
    text = Counting("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n")
    text.scanned = []
    entries = files._array(text, tmp_path / "set.json")
    assert [line for line, _ in entries][:3] == [2, 3, 4] and entries[-1][0] == 3001
    assert sum(text.scanned) <= len(text), (len(text.scanned), sum(text.scanned))

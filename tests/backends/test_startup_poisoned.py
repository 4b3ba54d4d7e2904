"""startups.jsonl read back (issue 28, item 6): one poisoned line - a 400-digit phase time, NaN,
Infinity, a negative or a string time, a line that is no record - costs only itself. It is skipped,
the ETA comes from the other starts, the launch says which lines it skipped, and `ddtune up` on the
simulator starts as ever (one such line made every `up` an OverflowError)."""

from __future__ import annotations

import json
import math

from backends.knobs.config import load_config
from backends.core.phase import Phase
from backends.server.startup import MAX_PHASE_S, StartupHistory
from tests.backends.lifecycle_support import write_config
from tests.helpers import run_ddtune

GOOD = {"model": "demo", "at": 1.0, "ok": True, "phases": {Phase.LOADING: 4.0, Phase.WARMUP: 1.0}}
POISON = [  # (the line, what the note says about it)
    ('{"server": "{key}", "ok": true, "phases": {"loading-weights": 1' + "0" * 400 + "}}",
     "loading-weights time 1000"),
    ('{"server": "{key}", "ok": true, "phases": {"loading-weights": NaN}}', "loading-weights time NaN"),
    ('{"server": "{key}", "ok": true, "phases": {"warmup": Infinity}}', "warmup time Infinity"),
    ('{"server": "{key}", "ok": true, "phases": {"loading-weights": 1e400}}', "loading-weights time Infinity"),
    ('{"server": "{key}", "ok": true, "phases": {"loading-weights": -3e40}}', "loading-weights time -3e+40"),
    ('{"server": "{key}", "ok": true, "phases": {"loading-weights": "12"}}', 'loading-weights time "12"'),
    ('{"server": "{key}", "ok": "yes", "phases": {}}', '"ok" must be true or false'),
    ('{"server": "{key}", "ok": true, "phases": [1]}', 'no "phases" object'),
    ('[1, 2]', "not a JSON object"),
    ('{"server": "{key}", "ok": true, "phases": {"loading-weights": 4', "not JSON"),
]


def poisoned(path, key: str) -> None:
    good = json.dumps({"server": key, **GOOD})
    path.write_text("\n".join([good, *(line.replace("{key}", key) for line, _ in POISON), good]) + "\n")


def test_each_poisoned_line_costs_only_itself_and_is_named(tmp_path):
    history = StartupHistory(tmp_path / "startups.jsonl")
    poisoned(history.path, "sim:demo")
    notes: list[str] = []
    assert history.medians("sim:demo", notes.append) == {Phase.LOADING: 4.0, Phase.WARMUP: 1.0}
    assert len(history.starts("sim:demo")) == 2
    note, = notes
    assert note.startswith(f"{history.path}: skipped {len(POISON)} unusable line(s) (line 2: loading-weights time 1000")
    assert "line 3: loading-weights time NaN is not a duration (0 to 604800 s)" in note
    assert "start ETAs come from the other starts" in note


def test_any_time_that_is_kept_is_a_plausible_duration(tmp_path):
    history = StartupHistory(tmp_path / "startups.jsonl")
    for value in (0, 0.5, MAX_PHASE_S, MAX_PHASE_S + 1, 2**63, -0.0, 5e-324):
        history.append("m", {Phase.LOADING: value}, ok=True, at=1.0)
    values = [r["phases"][Phase.LOADING] for r in history.starts("m")]
    assert values == [0.0, 0.5, MAX_PHASE_S, -0.0, 0.0] and all(math.isfinite(v) for v in values)


def test_up_on_the_simulator_starts_despite_a_poisoned_history_and_says_what_it_skipped(tmp_path, state_dir, groups):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.3"))
    poisoned(state_dir / "startups.jsonl", load_config(cfg).startup_key())
    try:
        out = run_ddtune("--config", str(cfg), "up", DDTUNE_STATE_DIR=str(state_dir))
        groups.track_state()
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
        assert f"{state_dir / 'startups.jsonl'}: skipped {len(POISON)} unusable line(s)" in out.stderr
        assert ", ETA 5s" in out.stderr  # the two good starts: 4 s loading + 1 s warmup
    finally:
        down = run_ddtune("--config", str(cfg), "down", DDTUNE_STATE_DIR=str(state_dir))
    assert down.returncode == 0, down.stderr

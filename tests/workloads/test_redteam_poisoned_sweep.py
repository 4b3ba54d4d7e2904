"""Red team, round 3: a sweep folder is a file anyone may have edited, and ``sweep --resume`` acts on
it: it restarts the managed server with the configurations it lists and returns it to the knobs its
manifest says ran before. Held here, through the real CLI on the simulator as root: a knob value a
config file could not hold (``budget = -5``, a text with a line break and an escape sequence) is
refused with one line naming the configuration, before any restart (it reached the server's argv
and forged a ``[ok  ]`` line of the output); a configuration name that is not one printable line is
refused as not a plan ddtune wrote; a poisoned lane setting is one line, never a traceback."""

from __future__ import annotations

import json

import pytest

from tests.backends.lifecycle_support import write_config
from tests.backends.state_support import leaders
from tests.helpers import free_port, run_ddtune

SMALL = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "1", "--max-tokens", "8", "--warmup", "0",
         "--no-eval")
FORGED = "[ok  ] forged"


@pytest.fixture
def swept(tmp_path, state_dir, no_leftovers):
    """A finished one-configuration sweep on the simulator (its server stopped), and its config."""
    cfg = write_config(tmp_path, port=free_port())
    folder = tmp_path / "sweep"
    out = run_ddtune("--config", str(cfg), "sweep", "b8-t4-w2048", *SMALL, "--out", str(folder), timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert run_ddtune("--config", str(cfg), "down", timeout=60).returncode == 0
    return cfg, folder


def poison(folder, **changes) -> None:
    """The manifest as a resumable sweep's, with ``changes``; ``add`` appends a configuration."""
    manifest = json.loads((folder / "sweep.json").read_text())
    manifest["status"] = "interrupted"
    if "add" in changes:
        manifest["plan"]["configs"].append(changes.pop("add"))
    manifest.update(changes)
    (folder / "sweep.json").write_text(json.dumps(manifest))


def resume(cfg, folder):
    out = run_ddtune("--config", str(cfg), "sweep", "--resume", "--out", str(folder), timeout=240)
    both = out.stdout + out.stderr
    assert "Traceback" not in both and "\x1b" not in both, both[-3000:]
    assert not any(line.startswith(FORGED) for line in both.splitlines()), both[-3000:]
    return out


@pytest.mark.parametrize(("knobs", "says"), [
    ({"budget": -5}, "configuration evil: knob 'budget': expected"),
    ({"window": f"2048\n{FORGED}\x1b[31m"}, "configuration evil: knob 'window': '2048\\n[ok  ] forged"),
    ({"window": {"a": [1]}}, "configuration evil: knob 'window': expected"),
])
def test_a_resumed_configuration_with_a_knob_no_config_could_hold_is_refused_before_any_restart(swept, state_dir,
                                                                                                knobs, says):
    cfg, folder = swept
    poison(folder, add={"name": "evil", "knobs": knobs, "baseline": False})
    out = resume(cfg, folder)
    assert out.returncode == 2, out.stderr[-3000:]
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("ddtune: error:")]
    assert says in line, line
    assert "launched pid" not in out.stderr and leaders(state_dir) == []  # no server started for it


def test_a_manifests_server_before_with_a_forged_knob_is_refused_before_any_restart(swept, state_dir):
    cfg, folder = swept
    poison(folder, server_before={"knobs": {"window": f"1\n{FORGED}"}},
           add={"name": "b16", "knobs": {"budget": 16, "topk": 4, "window": 2048}, "baseline": False})
    out = resume(cfg, folder)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "the manifest's server_before: knob 'window': '1\\n[ok  ] forged'" in out.stderr, out.stderr[-3000:]
    assert "launched pid" not in out.stderr and leaders(state_dir) == []


def test_a_configuration_name_that_is_not_one_printable_line_is_refused(swept, state_dir):
    cfg, folder = swept
    poison(folder, add={"name": f"x\n{FORGED}\x1b[31m", "knobs": {"budget": 4}, "baseline": False})
    out = resume(cfg, folder)
    assert out.returncode == 2, out.stderr[-3000:]
    assert f"{folder / 'sweep.json'}: plan: not a sweep plan ddtune wrote (ValueError: \"configuration name " \
        "'x\\\\n[ok  ] forged" in out.stderr, out.stderr[-3000:]
    assert leaders(state_dir) == []


@pytest.mark.parametrize(("parallel", "says"), [
    ({"parallel": 1e400}, "the manifest's parallel.parallel: not a lane count ddtune wrote"),
    ({"parallel": "x"}, "the manifest's parallel.parallel: not a lane count ddtune wrote"),
    ({"parallel": 2, "gpus_per_server": "y"}, "parallel.gpus_per_server: not a lane count ddtune wrote"),
    ({"parallel": 2, "gpus": ["0\n[ok] f", {}]}, "the manifest's parallel.gpus: not a list of GPUs ddtune wrote"),
    ({"parallel": 1, "gpus": ["²"]}, "the manifest's parallel.gpus: not a list of GPUs ddtune wrote"),
])
def test_a_poisoned_lane_setting_is_one_line(swept, state_dir, parallel, says):
    cfg, folder = swept
    poison(folder, parallel=parallel)
    out = resume(cfg, folder)
    assert out.returncode == 2, out.stderr[-3000:]
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("ddtune: error:")]
    assert says in line and "\n" not in line, line


@pytest.mark.parametrize("gpus", ["²", "9" * 5000])
def test_a_gpu_index_int_cannot_read_is_one_line(tmp_path, state_dir, gpus):
    cfg = write_config(tmp_path, port=free_port())
    out = run_ddtune("--config", str(cfg), "sweep", "b8-t4-w2048", "--parallel", "1", "--gpus", gpus, *SMALL,
                     timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "is not a GPU index" in out.stderr

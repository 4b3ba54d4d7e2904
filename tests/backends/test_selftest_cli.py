"""``ddtune selftest`` end to end on the simulator, as a CLI subprocess: green with no config, and each
simulator fault named by the check it breaks (and the stop still leaves nothing)."""

from __future__ import annotations

import json

from tests.backends.lifecycle_support import FAST, write_config
from tests.helpers import run_ddtune


def selftest(tmp_path, *args: str) -> tuple[int, dict, str]:
    out = run_ddtune(*args, "selftest", "--json", timeout=60, XDG_CONFIG_HOME=str(tmp_path / "xdg"),
                     TMPDIR=str(tmp_path), DDTUNE_STATE_DIR=str(tmp_path / "state"))
    return out.returncode, json.loads(out.stdout), out.stderr


def statuses(doc: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in doc["checks"]}


def test_selftest_with_no_config_is_green_on_the_simulator_and_leaves_the_state_dir_alone(tmp_path):
    (tmp_path / "state").mkdir(mode=0o700)
    code, doc, err = selftest(tmp_path)
    assert code == 0, err
    assert doc["ok"] and doc["backend"] == "sim"
    got = statuses(doc)
    assert got == {"build": "pass", "flags": "pass", "ready": "pass", "draft_runner": "pass", "acceptance": "pass",
                   "agree": "pass", "gpu": "skip", "knob_restart": "pass", "collapse_alarm": "pass", "stop": "pass"}
    agree = next(c for c in doc["checks"] if c["name"] == "agree")
    assert "16.00 of block size 16" in agree["detail"]
    assert list((tmp_path / "state").iterdir()) == []   # the user's server record, logs, history untouched
    assert doc["work_dir"] is None                       # cleaned up when green


def test_a_window_routed_to_an_env_var_the_server_ignores_fails_draft_runner(tmp_path):
    cfg = write_config(tmp_path, extra=FAST)
    cfg.write_text(cfg.read_text() + '[knobs.map]\nwindow = { env = "DDTUNE_TEST_IGNORED_WINDOW" }\n')
    code, doc, _ = selftest(tmp_path, "--config", str(cfg))
    assert code == 1 and not doc["ok"]
    got = statuses(doc)
    assert got["draft_runner"] == "fail" and got["knob_restart"] == "fail" and got["stop"] == "pass"
    runner = next(c for c in doc["checks"] if c["name"] == "draft_runner")
    assert "server says None" in runner["detail"] and "env DDTUNE_TEST_IGNORED_WINDOW" in runner["fix"]
    assert doc["work_dir"]   # kept when a check failed: the logs are there


def test_no_spec_fields_and_no_metrics_fails_acceptance_by_name(tmp_path):
    cfg = write_config(tmp_path, extra=(*FAST, "--sim-no-spec-fields"))
    code, doc, _ = selftest(tmp_path, "--config", str(cfg))
    assert code == 1
    got = statuses(doc)
    assert got["acceptance"] == "fail" and got["agree"] == "skip" and got["collapse_alarm"] == "skip"
    assert got["ready"] == "pass" and got["stop"] == "pass"


def test_a_crash_during_capture_fails_ready_and_leaves_nothing_running(tmp_path):
    cfg = write_config(tmp_path, extra=(*FAST, "--sim-fail-at", "capture"))
    code, doc, _ = selftest(tmp_path, "--config", str(cfg))
    assert code == 1
    got = statuses(doc)
    assert got["ready"] == "fail" and got["stop"] == "pass"
    assert all(got[name] == "skip" for name in ("draft_runner", "acceptance", "knob_restart", "collapse_alarm"))
    ready = next(c for c in doc["checks"] if c["name"] == "ready")
    assert "capture" in ready["detail"].lower() or "cuda graph" in ready["detail"].lower()


def test_flags_a_tiny_model_cannot_take_are_set_aside_by_name(tmp_path):
    cfg = write_config(tmp_path, extra=(*FAST, "--tp-size", "8", "--context-length=131072",
                                        "--reasoning-parser", "qwen3"))
    code, doc, err = selftest(tmp_path, "--config", str(cfg))
    assert code == 0, err
    aside = {a["args"][0].split("=")[0]: a["args"] for a in doc["set_aside"]}
    assert aside == {"--tp-size": ["--tp-size", "8"], "--context-length": ["--context-length=131072"],
                     "--reasoning-parser": ["--reasoning-parser", "qwen3"]}


def test_a_flag_of_another_release_fails_flags_before_anything_starts(tmp_path):
    # 0.5.23's simulator has no 0.5.11 window spelling
    cfg = write_config(tmp_path, extra=(*FAST, "--speculative-dflash-draft-window-size", "1024"), knobs={})
    code, doc, _ = selftest(tmp_path, "--config", str(cfg))
    assert code == 1
    got = statuses(doc)
    assert got["flags"] == "fail" and got["ready"] == "skip" and got["stop"] == "skip"
    flags = next(c for c in doc["checks"] if c["name"] == "flags")
    assert "--speculative-dflash-draft-window-size" in flags["detail"]


async def test_the_selftest_asks_no_help_this_sglang_printed_before(tmp_path, monkeypatch):
    """Issue 32: on a real SGLang each `--help` imports it (seconds of the selftest's 157 s): the
    selftest reads the one ddtune cached in the user's state dir for this version instead."""
    from backends.knobs.config import load_config
    from backends.selftest import run_selftest
    from tests.backends.lifecycle_support import STANDIN_MAIN

    cfg = write_config(tmp_path, backend="sglang", extra=FAST)  # a stand-in sglang 0.5.23 in tmp_path/standin
    asked = tmp_path / "asked-help"
    (tmp_path / "standin" / "sglang" / "launch_server.py").write_text(
        f"import sys\nif '--help' in sys.argv:\n    open({str(asked)!r}, 'a').write('x')\n" + STANDIN_MAIN)
    mine = tmp_path / "mine"
    (mine / "help").mkdir(parents=True)
    mine.chmod(0o700)
    monkeypatch.setenv("DDTUNE_STATE_DIR", str(mine))
    printed = run_ddtune("sim", "--help").stdout  # the stand-in's own --help, as ddtune cached it once
    (mine / "help" / "sglang-0.5.23.txt").write_text(printed)
    report = await run_selftest(load_config(cfg), work_dir=str(tmp_path / "work"))
    names = [c.name for c in report.checks]
    assert names[0] == "build" and not asked.exists(), names  # the flags were read from the cache
    assert sorted(p.name for p in mine.iterdir()) == ["help"]  # the user's state dir: only read

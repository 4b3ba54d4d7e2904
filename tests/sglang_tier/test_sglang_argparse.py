"""Optional tier: SGLang 0.5.23's own parser accepts the launch commands ddtune builds.

Runs only when DDTUNE_SGLANG_PYTHON names an interpreter with sglang installed (.ci/sglang-tier.sh
builds one). ddtune reads that interpreter's real ``--help`` to pick flags, builds the command for
every shipped preset, and SGLang's ``prepare_server_args`` parses it.
"""

import json
import os
import subprocess

import pytest

from backends.knobs.config import ServerConfig, load_preset, preset_names
from backends.core.errors import ConfigError
from backends.knobs.plan import plan_launch
from backends.drivers.spawn import SGLangDriver

SGLANG_PYTHON = os.environ.get("DDTUNE_SGLANG_PYTHON")
pytestmark = [
    pytest.mark.sglang,
    pytest.mark.skipif(not SGLANG_PYTHON, reason="DDTUNE_SGLANG_PYTHON is not set (see .ci/sglang-tier.sh)"),
]

CHECK = """
import contextlib, io, json, sys, warnings
warnings.simplefilter("ignore")
from sglang.srt.server_args import prepare_server_args
out = []
for argv in json.load(sys.stdin):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = prepare_server_args(argv)
        out.append({"ok": True, "window": args.speculative_draft_window_size,
                    "algorithm": args.speculative_algorithm, "draft": args.speculative_draft_model_path})
    except SystemExit as exc:
        out.append({"ok": False, "error": err.getvalue().strip().splitlines()[-1:], "code": exc.code})
print(json.dumps(out))
"""


def sglang_parse(argvs):
    out = subprocess.run([SGLANG_PYTHON, "-c", CHECK], input=json.dumps(argvs), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def help_text(tmp_path_factory):
    old = os.environ.get("DDTUNE_STATE_DIR")
    os.environ["DDTUNE_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    try:
        helptext = SGLangDriver(ServerConfig(backend="sglang", python=SGLANG_PYTHON)).learn_help()
    finally:
        if old is None:
            del os.environ["DDTUNE_STATE_DIR"]
        else:
            os.environ["DDTUNE_STATE_DIR"] = old
    assert helptext.version == "0.5.23"
    return helptext.text


def plan_for(help_text, knobs):
    config = ServerConfig(backend="sglang", python=SGLANG_PYTHON, model="Qwen/Qwen3-8B",
                          draft_model="z-lab/Qwen3-8B-DFlash-b16").with_knobs(knobs)
    return plan_launch(config, help_text, (SGLANG_PYTHON, "-m", "sglang.launch_server"), "0.5.23")


def test_every_preset_builds_a_command_sglang_accepts(help_text):
    argvs, expected = [], []
    for name in preset_names():
        knobs = load_preset(name)
        if knobs.get("budget") or knobs.get("topk"):
            with pytest.raises(ConfigError, match="no tree verifier"):
                plan_for(help_text, knobs)  # plain 0.5.23: tree knobs are an error, not a silent drop
            knobs = dict(knobs, budget=None, topk=None)
        plan = plan_for(help_text, knobs)
        assert "--enable-metrics" in plan.argv  # acceptance from the counters (chat before 0.5.19)
        argvs.append(list(plan.argv[3:]))
        expected.append((name, plan.expected["window_size"]))
    results = sglang_parse(argvs)
    for (name, window), result in zip(expected, results, strict=True):
        assert result["ok"], (name, result)
        assert result["window"] == window, name
        assert result["algorithm"].upper() == "DFLASH" and result["draft"] == "z-lab/Qwen3-8B-DFlash-b16"


def test_the_0511_spelling_is_rejected_by_0523(help_text):
    """Proves the check can fail: the flag 0.5.11 used is an unknown argument in 0.5.23."""
    plan = plan_for(help_text, {"window": 2048})
    argv = [a if a != "--speculative-draft-window-size" else "--speculative-dflash-draft-window-size"
            for a in plan.argv[3:]]
    (result,) = sglang_parse([argv])
    assert not result["ok"] and result["code"] == 2
    assert "unrecognized arguments: --speculative-dflash-draft-window-size" in result["error"][0]

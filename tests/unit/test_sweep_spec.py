"""From presets, a plan file and options to a SweepPlan; the speculation-off baseline config."""

import pytest

from backends.knobs.config import ServerConfig
from backends.core.errors import ConfigError, UsageError
from backends.knobs.baseline import baseline_config
from workloads.sweep.spec import build_plan


def test_presets_baseline_and_matrix_options():
    plan = build_plan(["b8-t4-w2048", "b8-t4-nowindow"], baseline=True, contexts=[60, 60, 1024], concurrency=[2],
                      max_tokens=64, run_eval=False)
    assert [c.name for c in plan.configs] == ["baseline", "b8-t4-w2048", "b8-t4-nowindow"]
    assert plan.configs[0].baseline and plan.configs[1].knobs == {"budget": 8, "topk": 4, "window": 2048}
    assert plan.configs[2].knobs["window"] is None
    assert plan.bench.contexts == (60, 1024) and plan.bench.concurrencies == (2,) and plan.bench.max_tokens == 64
    assert plan.eval is None


def test_plan_file_with_custom_config_and_cli_overrides(tmp_path):
    f = tmp_path / "plan.toml"
    f.write_text('presets = ["b4-t4-w2048"]\nrepeats = 3\nbaseline = true\n'
                 '[eval]\nmax_tokens = 512\nproblems = ["fib"]\n'
                 '[bench]\ncontexts = [1024]\nconcurrency = [1, 8]\nmax_tokens = 100\n'
                 '[[config]]\nname = "b8-t8"\nknobs = { budget = 8, topk = 8, window = "none" }\n')
    plan = build_plan(["b16-t4-w2048"], plan_file=str(f), max_tokens=50)
    assert [c.name for c in plan.configs] == ["baseline", "b4-t4-w2048", "b16-t4-w2048", "b8-t8"]
    assert plan.configs[3].knobs == {"budget": 8, "topk": 8, "window": None}
    assert plan.repeats == 3 and plan.bench.max_tokens == 50 and plan.bench.concurrencies == (1, 8)
    assert plan.eval.max_tokens == 512 and plan.eval.problems == ("fib",)


@pytest.mark.parametrize("text, match", [
    ("nonsense = 1\n", "unknown key 'nonsense'"),
    ("[bench]\nctx = [1]\n", r"\[bench\] ctx"),
    ('[[config]]\nname = "x"\n', "needs name"),
    ('[[config]]\nname = "x"\nknobs = { budget = -1 }\n', "knob 'budget'"),
    ("[bench]\ncontexts = [-1]\n", "contexts: expected an integer >= 0"),  # 0: each prompt as it is
    ("[bench]\nprompts = [3]\n", r"prompts\[0\]: expected a string"),
    ("[bench]\nrequest_rates = [0]\n", r"request_rates\[0\] must be above 0"),
    ("[bench]\nslo = { ttfb_ms = 5 }\n", "slo.ttfb_ms"),
    ("[bench]\nmulti_turn = \"all\"\n", "multi_turn must be"),
])
def test_bad_plan_files_name_the_field(tmp_path, text, match):
    f = tmp_path / "plan.toml"
    f.write_text('presets = ["b8-t4-w2048"]\n' + text)
    with pytest.raises(ConfigError, match=match):
        build_plan([], plan_file=str(f))


def test_baseline_alone_is_not_a_sweep():
    with pytest.raises(UsageError, match="no configuration"):
        build_plan([], baseline=True)


def test_baseline_config_turns_speculation_off():
    base = ServerConfig(extra_args=("--speculative-algorithm", "DFLASH", "--mem-fraction-static", "0.8",
                                    "--speculative-num-draft-tokens=16", "--speculative-use-block-verification"),
                        env={"SGLANG_DDTREE_MAX_TOPK": "4", "X": "1"}).with_knobs({"budget": 8, "topk": 4})
    cfg = baseline_config(base)
    assert cfg.draft_model is None and set(cfg.knobs.values()) == {None}
    assert cfg.extra_args == ("--mem-fraction-static", "0.8") and cfg.env == {"X": "1"}
    assert cfg.config_hash() != base.config_hash()


@pytest.mark.parametrize("text, match", [
    ("presets = 5\n", "presets: expected a list"),
    ("presets = [5]\n", r"presets\[0\]: expected a string"),
    ("[bench]\ncontexts = 5\n", r"\[bench\] contexts: expected a list"),
    ("[bench]\nwarmup = -1\n", r"\[bench\] warmup: expected an integer >= 0"),
    ("[bench]\ncoding = 1\n", "coding: expected true or false"),
    ("bench = 5\n", "bench: expected a table"),
    ("eval = 5\n", "eval: expected true or false or a table"),
    ("[eval]\nmax_tokens = \"x\"\n", r"\[eval\] max_tokens: expected a positive integer"),
    ("[eval]\nproblems = [1]\n", r"\[eval\] problems\[0\]"),
    ("config = [5]\n", "config #1: needs name"),
    ("warmup_requests = 1.5\n", "warmup_requests: expected an integer >= 0"),
    ("repeats = nan\n", "repeats: expected a positive integer"),
])
def test_plan_fields_of_the_wrong_type_name_the_field(tmp_path, text, match):
    f = tmp_path / "plan.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=match) as info:
        build_plan(["b8-t4-w2048"], plan_file=str(f))
    assert info.value.message.startswith(f"--plan {f}")


def test_binary_plan_file_names_it(tmp_path):
    f = tmp_path / "plan.toml"
    f.write_bytes(b"\x00\xff\xfe")
    with pytest.raises(ConfigError, match=f"--plan {f}: not a UTF-8 text file"):
        build_plan([], plan_file=str(f))


def test_a_sweep_spec_builds_its_plan_from_presets_and_options_and_refuses_a_bad_preset_at_once():
    from workloads.sweep.run import SweepSpec

    spec = SweepSpec(ServerConfig(), presets=["b8-t4-w2048"],
                     plan_options={"baseline": True, "contexts": [60], "concurrency": [2], "run_eval": False})
    assert spec.plan is not None and [c.name for c in spec.plan.configs] == ["baseline", "b8-t4-w2048"]
    assert spec.plan.bench.contexts == (60,) and spec.plan.bench.concurrencies == (2,) and spec.plan.eval is None
    assert SweepSpec(ServerConfig(), resume=True).plan is None  # a resumed sweep runs its own plan
    with pytest.raises(UsageError, match="no such preset"):  # before anything starts: the spec is not made
        SweepSpec(ServerConfig(), presets=["no-such"])

"""Knob mapping as data: flags/env per SGLang flavour, learned from --help; errors before any restart."""

import pytest

from backends.knobs.config import KnobRoute, ServerConfig
from backends.core.errors import ConfigError
from backends.knobs.plan import help_flags, plan_launch

PREFIX = ("python3", "-m", "sglang.launch_server")
BASE = "usage: launch_server.py [-h] --model-path MODEL_PATH [--port PORT]\n" \
       "  --speculative-algorithm {EAGLE,DFLASH}\n" \
       "  --speculative-draft-model-path SPECULATIVE_DRAFT_MODEL_PATH\n  --speculative-num-draft-tokens N\n"
HELP_0511 = BASE + "  --speculative-dflash-draft-window-size SPECULATIVE_DFLASH_DRAFT_WINDOW_SIZE\n"
HELP_0512 = HELP_0511 + "  --speculative-draft-window-size SPECULATIVE_DRAFT_WINDOW_SIZE\n"
HELP_0523 = BASE + "  --speculative-draft-window-size SPECULATIVE_DRAFT_WINDOW_SIZE\n"
HELP_PR = HELP_0523 + "  --speculative-ddtree-budget SPECULATIVE_DDTREE_BUDGET\n"
HELP_FORK = HELP_0523 + "  --speculative-dflash-enable-ddtree\n"


def cfg(**knobs):
    return ServerConfig(backend="sglang").with_knobs(knobs)


def flag_value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_help_flags_parses_argparse_text():
    flags = help_flags(HELP_PR)
    assert "--speculative-ddtree-budget" in flags and "--model-path" in flags
    assert "--SPECULATIVE" not in " ".join(flags)


def test_0523_window_uses_new_flag():
    plan = plan_launch(cfg(window=2048), HELP_0523, PREFIX, "0.5.23")
    assert plan.argv[:3] == PREFIX
    assert flag_value(plan.argv, "--speculative-draft-window-size") == "2048"
    assert flag_value(plan.argv, "--speculative-algorithm") == "DFLASH"
    assert flag_value(plan.argv, "--speculative-draft-model-path") == "demo-draft"
    assert plan.expected["window_size"] == 2048 and plan.expected["compact_cache"] is True


def test_0511_window_uses_old_flag():
    plan = plan_launch(cfg(window=2048), HELP_0511, PREFIX, "0.5.11")
    assert flag_value(plan.argv, "--speculative-dflash-draft-window-size") == "2048"
    assert "--speculative-draft-window-size" not in plan.argv


def test_0512_prefers_new_spelling():
    plan = plan_launch(cfg(window=4096), HELP_0512, PREFIX, "0.5.12")
    assert flag_value(plan.argv, "--speculative-draft-window-size") == "4096"
    assert "--speculative-dflash-draft-window-size" not in plan.argv


def test_window_none_passes_nothing():
    plan = plan_launch(cfg(window=None), HELP_0523, PREFIX, "0.5.23")
    assert not any("window" in a for a in plan.argv)
    assert plan.expected["window_size"] is None and plan.expected["compact_cache"] is False


def test_ddtree_pr_budget_flag_topk_env_and_algorithm():
    plan = plan_launch(cfg(budget=8, topk=4, window=2048), HELP_PR, PREFIX, "pr")
    assert flag_value(plan.argv, "--speculative-algorithm") == "DDTREE"
    assert flag_value(plan.argv, "--speculative-ddtree-budget") == "8"
    assert plan.env["SGLANG_DDTREE_MAX_TOPK"] == "4"
    assert plan.expected["budget"] == 8


def test_ddtree_pr_without_tree_knobs_stays_dflash():
    plan = plan_launch(cfg(window=2048), HELP_PR, PREFIX, "pr")
    assert flag_value(plan.argv, "--speculative-algorithm") == "DFLASH"
    assert "--speculative-ddtree-budget" not in plan.argv


def test_ddtree_fork_budget_plus_one_and_switch():
    plan = plan_launch(cfg(budget=8, window=2048), HELP_FORK, PREFIX, "fork")
    assert flag_value(plan.argv, "--speculative-num-draft-tokens") == "9"
    assert "--speculative-dflash-enable-ddtree" in plan.argv
    assert plan.block_size == 9


def test_fork_topk_is_an_error_not_a_drop():
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(budget=8, topk=4), HELP_FORK, PREFIX, "fork")
    assert "topk" in info.value.message and "[knobs.map]" in info.value.hint


@pytest.mark.parametrize("knob", ["budget", "topk"])
def test_plain_0523_has_no_tree_verifier(knob):
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(**{knob: 8}), HELP_0523, PREFIX, "0.5.23")
    msg = info.value.message
    assert knob in msg and "0.5.23" in msg and "tree" in msg.lower()
    assert f"--set {knob}=none" in info.value.hint


def test_window_below_block_size_is_refused():
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(window=8), HELP_0523, PREFIX, "0.5.23")
    assert "block size 16" in info.value.message


def test_window_below_explicit_block_size_from_extra_args():
    config = ServerConfig(backend="sglang", extra_args=("--speculative-num-draft-tokens", "32"))
    config = config.with_knobs({"window": 24})
    with pytest.raises(ConfigError):
        plan_launch(config, HELP_0523, PREFIX, "0.5.23")


def test_config_map_overrides_data():
    config = cfg(topk=4, budget=8).__class__(
        backend="sglang", knobs={"budget": 8, "topk": 4, "window": 2048},
        knob_map={"topk": KnobRoute("topk", env="MY_TOPK")})
    plan = plan_launch(config, HELP_FORK, PREFIX, "fork")
    assert plan.env["MY_TOPK"] == "4"


def test_mapped_flag_missing_from_help_is_an_error():
    config = ServerConfig(backend="sglang", knobs={"window": 2048, "mem": "0.8"},
                          knob_map={"mem": KnobRoute("mem", flag="--no-such-flag")})
    with pytest.raises(ConfigError) as info:
        plan_launch(config, HELP_0523, PREFIX, "0.5.23")
    assert "--no-such-flag" in info.value.message


def test_conflicting_algorithm_in_extra_args():
    config = ServerConfig(backend="sglang", extra_args=("--speculative-algorithm", "DFLASH"),
                          knobs={"budget": 8, "window": 2048})
    with pytest.raises(ConfigError) as info:
        plan_launch(config, HELP_PR, PREFIX, "pr")
    assert "DDTREE" in info.value.message


def test_extra_args_come_last_and_user_flag_knob():
    config = ServerConfig(backend="sglang", extra_args=("--mem-fraction-static", "0.8"),
                          knobs={"window": 2048, "graphs": True},
                          knob_map={"graphs": KnobRoute("graphs", flag="--disable-cuda-graph")})
    plan = plan_launch(config, HELP_0523 + "  --disable-cuda-graph\n  --mem-fraction-static M\n", PREFIX, "0.5.23")
    assert plan.argv[-2:] == ("--mem-fraction-static", "0.8")
    assert "--disable-cuda-graph" in plan.argv


def test_metrics_are_switched_on_where_the_server_has_them_unless_extra_args_say_so():
    """The /metrics counters give acceptance where chat carries none (sglang before 0.5.19)."""
    help_text = HELP_0523 + "  --enable-metrics      Enable log prometheus metrics.\n"
    assert plan_launch(cfg(window=2048), help_text, PREFIX, "0.5.23").argv.count("--enable-metrics") == 1
    assert "--enable-metrics" not in plan_launch(cfg(window=2048), HELP_0523, PREFIX, "0.5.23").argv
    own = ServerConfig(backend="sglang", extra_args=("--enable-metrics-for-all-schedulers",))
    assert "--enable-metrics" not in plan_launch(own, help_text, PREFIX, "0.5.23").argv
    again = ServerConfig(backend="sglang", extra_args=("--enable-metrics",))
    assert plan_launch(again, help_text, PREFIX, "0.5.23").argv.count("--enable-metrics") == 1


@pytest.mark.parametrize("help_text, version", [(HELP_0523, "0.5.23"), (HELP_PR, "0.5.23"), (HELP_0511, "0.5.11")])
def test_a_speculation_off_launch_carries_no_speculative_flag(help_text, version):
    """Issue 22 item 7: a server without a draft model (docs/lossless.md's baseline) got the window's
    default 2048 as --speculative-draft-window-size. Draft knobs reach only a speculative server."""
    from backends.knobs.config import config_from_dict

    off = config_from_dict({"server": {"backend": "sglang", "model": "m", "draft_model": "none",
                                       "extra_args": ["--mem-fraction-static", "0.8"]}}, "nospec.toml")
    for config in (off, off.with_knobs({"window": 1024, "block_size": 16, "spec_v2": True})):
        plan = plan_launch(config, help_text, PREFIX, version)
        assert not [a for a in plan.argv if a.startswith("--speculative-")], plan.argv
        assert "SGLANG_ENABLE_SPEC_V2" not in plan.env and plan.algorithm is None
        assert plan.argv[-2:] == ("--mem-fraction-static", "0.8")
        assert plan.expected["window_size"] is None  # what verification expects: nothing set
    on = plan_launch(cfg(), HELP_0523, PREFIX, "0.5.23")  # a draft model: the default window goes on
    assert flag_value(on.argv, "--speculative-draft-window-size") == "2048"

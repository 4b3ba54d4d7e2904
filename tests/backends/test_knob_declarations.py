"""Knob declarations (docs/knobs.md): a bad one names its field and the fix; typed values are
validated by the generated rules; the shipped DFlash knobs plan to the right argv and env, only
where the server's --help and version have them."""

import pytest

from backends.knobs.config import ServerConfig, config_from_dict, parse_set
from backends.core.errors import ConfigError, UsageError
from backends.knobs.decl import declare
from backends.knobs.plan import KNOBS, plan_launch
from backends.knobs.verify import line_field, verify

PREFIX = ("python3", "-m", "sglang.launch_server")
HELP = ("usage: launch_server.py --model-path M\n  --speculative-algorithm A\n  --speculative-draft-model-path P\n"
        "  --speculative-num-draft-tokens N\n  --speculative-draft-window-size W\n")
HELP_PR = HELP + "  --speculative-draft-kv-ratio R\n  --speculative-draft-swa-pool\n"
OK = {"type": "int", "flag": "--my-flag", "verify": "unverifiable"}


def cfg(**knobs):
    return ServerConfig(backend="sglang").with_knobs(knobs)


@pytest.mark.parametrize("decl, where, fix", [
    ({"type": "integer", "flag": "--x", "verify": "unverifiable"}, "[knob.my_knob] type: unknown type 'integer'",
     "int, float, bool, choice, str"),
    ({"flag": "--x", "verify": "unverifiable"}, "[knob.my_knob] type: missing", "type = 'int'"),
    ({"type": "int", "verify": "unverifiable"}, "[knob.my_knob]: needs a flag or an env var", 'flag = "--my-flag"'),
    ({"type": "int", "flag": "--x", "env": "X", "verify": "unverifiable"}, "[knob.my_knob]: needs a flag or an env",
     'env = "MY_ENV_VAR"'),
    (dict(OK, min=64, max=8), "[knob.my_knob] min: the bounds are reversed: min = 64 is above max = 8",
     "swap them: min = 8, max = 64"),
    ({"type": "float", "above": 1.0, "max": 1.0, "flag": "--x", "verify": "unverifiable"},
     "[knob.my_knob] above: the bounds are reversed", "swap them"),
    (dict(OK, flg="--x"), "[knob.my_knob] flg: unknown field", "flag"),
    (dict(OK, flag="my-flag"), "[knob.my_knob] flag: 'my-flag' is not a long flag", 'start with "--"'),
    ({"type": "int", "env": "X=1", "verify": "unverifiable"}, "[knob.my_knob] env: 'X=1' is not an environment",
     'env = "SGLANG_ENABLE_SPEC_V2"'),
    (dict(OK, since="0.5.20", until="0.5.11"), "[knob.my_knob] since: since 0.5.20 is after until 0.5.11",
     'swap them: since = "0.5.11", until = "0.5.20"'),
    (dict(OK, since="latest"), "[knob.my_knob] since: 'latest' is not an SGLang version", 'since = "0.5.14"'),
    ({"type": "int", "flag": "--x"}, "[knob.my_knob] verify: missing", '"unverifiable"'),
    (dict(OK, verify={"log": "Initialized X"}), "[knob.my_knob] verify field: missing", 'field = '),
    (dict(OK, verify={"server_info": "x", "negate": True}), "[knob.my_knob] verify negate: only a bool knob",
     "remove negate"),
    (dict(OK, verify=[{"server_info": "x", "log": "y"}]), "[knob.my_knob] verify[0]: needs exactly one of log",
     "unverifiable"),
    (dict(OK, type="choice"), "[knob.my_knob] choices: missing", "choices = ["),
    (dict(OK, choices=["a"]), "[knob.my_knob] choices: only a choice knob has choices", 'type = "choice"'),
    (dict(OK, type="bool", max=3), "[knob.my_knob] max: bounds apply to int and float knobs, not bool",
     "remove max"),
    (dict(OK, min=1, max=8, default=64), "[knob.my_knob] default: knob 'my_knob': expected an integer from 1 to 8",
     "set my_knob = 8"),
    (dict(OK, none=False), "[knob.my_knob] default: a knob that cannot be none needs a default", "default = 8"),
    ({"type": "int", "verify": "unverifiable", "route": [{"flag": "--a", "sincee": "1"}]},
     "[knob.my_knob] route[0] sincee: unknown field", "since"),
    ({"type": "int", "verify": "unverifiable", "route": []}, "[knob.my_knob] route: is empty", "route = ["),
])
def test_a_bad_declaration_names_the_field_and_the_fix(decl, where, fix):
    with pytest.raises(ConfigError) as info:
        config_from_dict({"knob": {"my_knob": decl}, "knobs": {"my_knob": 3}}, "cfg.toml")
    assert info.value.message.startswith(f"cfg.toml: {where}"), info.value.message
    assert fix.replace("'", '"') in (info.value.hint or "").replace("'", '"'), info.value.hint


def test_a_bad_name_and_an_unknown_rule_target_are_refused():
    with pytest.raises(ConfigError, match=r"\[knob.My-Knob\]: a knob name is lower-case"):
        config_from_dict({"knob": {"My-Knob": OK}}, "cfg.toml")
    with pytest.raises(ConfigError, match=r"\[knob.my_knob\] at_least: no knob named 'nope'") as info:
        config_from_dict({"knob": {"my_knob": dict(OK, at_least="nope")}}, "cfg.toml")
    assert "window" in info.value.hint


def test_an_undeclared_knob_says_how_to_declare_it():
    with pytest.raises(ConfigError) as info:
        config_from_dict({"knobs": {"frob": 1}}, "cfg.toml")
    assert "[knob.frob]" in info.value.hint and "[knobs.map] frob" in info.value.hint


@pytest.mark.parametrize("decl, good, bad", [
    ({"type": "float", "above": 0.0, "max": 1.0}, [("0.25", 0.25), (1, 1.0), ("none", None)],
     ["0", 0.0, "1.5", "nan", "inf", True, "x"]),
    ({"type": "int", "min": -4, "max": 4}, [("-4", -4), (0, 0), ("4", 4)], ["5", "-5", "1.5", 1.5, "true"]),
    ({"type": "bool"}, [("true", True), ("0", False), ("YES", True), (False, False), (1, True)],
     ["2", "maybe", 2, 0.5]),
    ({"type": "choice", "choices": ["fa3", "flashinfer"]}, [("FA3", "fa3"), ("flashinfer", "flashinfer")],
     ["triton", 3, True]),
    ({"type": "str"}, [("fp8_e4m3", "fp8_e4m3")], ["", " ", 3]),
    ({"type": "int", "none": False, "default": 4}, [("8", 8)], ["none"]),
])
def test_the_validator_is_generated_from_type_and_bounds(decl, good, bad):
    spec = declare("k", dict(decl, flag="--k", verify="unverifiable"), "cfg.toml")
    for raw, value in good:
        parsed = spec.parse(raw, "--set")
        assert parsed == value and type(parsed) is type(value), raw
    for raw in bad:
        with pytest.raises(ConfigError) as info:
            spec.parse(raw, "--set")
        assert info.value.message.startswith("--set: knob 'k': ") and info.value.hint, raw
        if decl["type"] in ("int", "float"):
            suggested = info.value.hint.split("--set k=")[1].split()[0].rstrip(",")
            assert spec.parse(suggested, "--set") is not None  # the hint parses


def test_shipped_knobs_are_declared_with_their_spellings():
    assert KNOBS["block_size"].routes[0].route.flag == "--speculative-num-draft-tokens"
    assert KNOBS["spec_v2"].routes[0].route.env == "SGLANG_ENABLE_SPEC_V2" and KNOBS["spec_v2"].type == "bool"
    assert KNOBS["draft_kv_ratio"].type == "float" and KNOBS["draft_kv_ratio"].requires == ("window",)
    assert KNOBS["draft_swa_pool"].routes[0].route.flag == "--speculative-draft-swa-pool"
    assert KNOBS["window"].at_least == "block_size" and KNOBS["topk"].verify == ()


def test_spec_v2_goes_as_an_env_var_one_or_zero():
    on = plan_launch(cfg(spec_v2=True), HELP, PREFIX, "0.5.23")
    off = plan_launch(cfg(spec_v2=False), HELP, PREFIX, "0.5.23")
    assert on.env["SGLANG_ENABLE_SPEC_V2"] == "1" and off.env["SGLANG_ENABLE_SPEC_V2"] == "0"
    assert "SGLANG_ENABLE_SPEC_V2" not in plan_launch(cfg(spec_v2=None), HELP, PREFIX, "0.5.23").env
    assert not any("SPEC_V2" in a for a in on.argv)
    assert on.expected["spec_v2"] is True and off.expected["spec_v2"] is False


def test_a_release_without_it_refuses_it_before_any_restart():
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(spec_v2=True, window=None), HELP, PREFIX, "0.5.11")
    assert "knob 'spec_v2' = true cannot be passed" in info.value.message and "0.5.14" in info.value.message
    assert "--set spec_v2=none" in info.value.hint
    assert plan_launch(cfg(spec_v2=True), HELP, PREFIX, "unknown").env["SGLANG_ENABLE_SPEC_V2"] == "1"


def test_draft_kv_knobs_only_where_the_help_lists_them():
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(draft_kv_ratio=0.25), HELP, PREFIX, "0.5.23")
    assert "sgl-project/sglang#40665" in info.value.message
    plan = plan_launch(cfg(draft_kv_ratio=0.25, draft_swa_pool=True), HELP_PR, PREFIX, "0.5.23")
    assert plan.argv[plan.argv.index("--speculative-draft-kv-ratio") + 1] == "0.25"
    assert "--speculative-draft-swa-pool" in plan.argv
    plan = plan_launch(cfg(draft_swa_pool=False), HELP_PR, PREFIX, "0.5.23")
    assert "--speculative-draft-swa-pool" not in plan.argv and plan.expected["draft_swa_pool"] is False


def test_rules_between_knobs():
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(draft_kv_ratio=0.5, window=None), HELP_PR, PREFIX, "0.5.23")
    assert "needs window set too" in info.value.message and "--set draft_kv_ratio=none" in info.value.hint
    with pytest.raises(ConfigError) as info:
        plan_launch(cfg(block_size=32, window=16), HELP, PREFIX, "0.5.23")
    assert "smaller than the block size 32" in info.value.message
    plan = plan_launch(cfg(block_size=32, window=64), HELP, PREFIX, "0.5.23")
    assert plan.argv[plan.argv.index("--speculative-num-draft-tokens") + 1] == "32" and plan.block_size == 32
    assert plan.expected["block_size"] == 32
    fork = HELP + "  --speculative-dflash-enable-ddtree\n"
    with pytest.raises(ConfigError, match="knobs 'budget' and 'block_size' both set --speculative-num-draft-tokens"):
        plan_launch(cfg(budget=8, block_size=16), fork, PREFIX, "fork")


def test_editor_and_set_take_the_config_table():
    from backends.knobs import check_knob_texts, knob_form

    config = config_from_dict({"knob": {"my_knob": dict(OK, min=1, max=8)}}, "cfg.toml")
    assert parse_set("my_knob=4", table=config.knob_table) == ("my_knob", 4)
    with pytest.raises(UsageError, match="--set: knob 'my_knob': expected an integer from 1 to 8"):
        parse_set("my_knob=9", table=config.knob_table)
    values = knob_form(config).values
    assert values["my_knob"] == "none" and values["spec_v2"] == "none" and values["window"] == "2048"
    assert "my_knob" not in config.knobs  # cleared and not pinned: not listed, not in the hash
    assert check_knob_texts({"my_knob": "9"}, config).problems["my_knob"].startswith("set my_knob = 8")
    problems = check_knob_texts({"block_size": "32", "window": "16"}, config).problems
    assert problems == {"window": "must be >= 32 (the block size), or none"}
    problems = check_knob_texts({"draft_kv_ratio": "0.5", "window": "none"}, config).problems
    assert problems["draft_kv_ratio"].startswith("needs")


def test_a_cleared_new_knob_leaves_the_config_hash_alone():
    base = ServerConfig()
    assert base.with_knobs({"spec_v2": None}).config_hash() == base.config_hash()
    assert base.with_knobs({"spec_v2": False}).config_hash() != base.config_hash()
    assert set(base.knobs) == {"budget", "topk", "window"}


def test_a_log_field_and_the_server_args_dump_are_read():
    line = "[2026-11-30 09:00:15 TP0] Initialized DFLASH draft runner. block_size=16, draft_window_size=None, x=0.5"
    assert line_field(line, "draft_window_size") == (True, None) and line_field(line, "x") == (True, 0.5)
    assert line_field(line, "size") == (False, None)  # a whole key only
    dump = "[2026-11-30 09:00:01] server_args={'disable_overlap_schedule': False, 'speculative_draft_kv_ratio': 0.25}"
    assert line_field(dump, "speculative_draft_kv_ratio") == (True, 0.25)
    old = "[2026-11-30 08:10:00] server_args=ServerArgs(model_path='m', disable_overlap_schedule=True, port=1)"
    assert line_field(old, "disable_overlap_schedule") == (True, True)
    out = verify({"spec_v2": True}, {"server_args=": dump}, knobs={"window": 2048, "spec_v2": True})
    check = {c.name: c for c in out.checks}["spec_v2"]
    assert (check.status, check.effective, check.source) == ("verified", True, "server_args line")
    out = verify({"spec_v2": True}, server_info={"disable_overlap_schedule": True}, knobs={"spec_v2": True})
    assert {c.name: c for c in out.checks}["spec_v2"].sentence == \
        "spec_v2: requested True, server says False (/server_info)"


def test_the_simulator_takes_and_reports_the_new_knobs():
    from backends.sim.args import SGLangValueError, parse
    from backends.sim.flags import build_parser

    base = ["--model-path", "m", "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d"]
    assert parse(base, environ={}).server_args["disable_overlap_schedule"] is False  # spec v2 on by default
    assert parse(base, environ={"SGLANG_ENABLE_SPEC_V2": "0"}).server_args["disable_overlap_schedule"] is True
    assert parse([*base, "--sim-version", "0.5.11"], environ={"SGLANG_ENABLE_SPEC_V2": "1"}) \
        .server_args["disable_overlap_schedule"] is True  # no spec v2 for DFlash before 0.5.14
    args = parse([*base, "--speculative-draft-kv-ratio", "0.25", "--speculative-draft-swa-pool"], environ={})
    assert args.server_args["speculative_draft_kv_ratio"] == 0.25 and args.server_args["speculative_draft_swa_pool"]
    with pytest.raises(SGLangValueError, match="--speculative-draft-kv-ratio must be in"):
        parse([*base, "--speculative-draft-kv-ratio", "1.5"], environ={})
    assert "--speculative-draft-kv-ratio" in build_parser("0.5.23").format_help()
    assert "--speculative-draft-kv-ratio" not in build_parser("0.5.11").format_help()


def test_a_sweep_plan_and_a_report_label_take_a_declared_knob(tmp_path):
    from workloads.report.inputs import knob_label
    from workloads.sweep.spec import build_plan

    config = config_from_dict({"knob": {"my_knob": dict(OK, min=1, max=8)}}, "cfg.toml")
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text('[[config]]\nname = "mine"\nknobs = { window = 2048, my_knob = "4", draft_kv_ratio = 0.5 }\n')
    plan = build_plan([], plan_file=str(plan_file), knob_table=config.knob_table)
    assert plan.configs[0].knobs == {"window": 2048, "my_knob": 4, "draft_kv_ratio": 0.5}
    plan_file.write_text('[[config]]\nname = "mine"\nknobs = { my_knob = 9 }\n')
    with pytest.raises(ConfigError, match=r"config 'mine': knob 'my_knob': expected an integer from 1 to 8"):
        build_plan([], plan_file=str(plan_file), knob_table=config.knob_table)
    assert knob_label({"budget": 8, "topk": 4, "window": 2048, "spec_v2": True, "my_knob": None}) == \
        "b8-t4-w2048,spec_v2=true"

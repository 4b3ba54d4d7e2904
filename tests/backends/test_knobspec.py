"""The knob table drives every reader: each knob's good values parse to typed values, each bad value
is an error naming the knob and the fix, wherever the value comes from (config, --set, editor, plan)."""

import argparse

import pytest

from backends.knobs.config import ServerConfig, config_from_dict, parse_set
from backends.core.errors import ConfigError, UsageError
from backends.knobs.plan import (DEFAULT_KNOBS, KNOBS, KnobRoute, KnobSpec, expected_reports, knob_for_effective_key,
                                 knob_spec, known_knobs, window_too_small)
from backends.knobs import check_knob_texts, knob_form

# the shipped knobs that take a positive integer (budget, topk, window, block_size); the typed rest below
COUNTS = sorted(n for n, s in KNOBS.items() if s.type == "int" and s.minimum == 1 and s.maximum is None)
GOOD = [(8, 8), ("8", 8), (" 16 ", 16), ("none", None), ("None", None), (4096, 4096)]
BAD = [0, -1, "0", "big", "", True, "true", 1.5, [8], None]
GENERIC_GOOD = [(3, 3), ("0.8", "0.8"), (True, True), ("false", False), ("none", None), ("-2", -2)]
GENERIC_BAD = [(1.5, "= 1 or quote it"), ([1], '"none"'), ("a\x00b", "remove it"), ({"x": 1}, '"none"')]


@pytest.mark.parametrize("name", COUNTS)
@pytest.mark.parametrize("raw, value", GOOD)
def test_each_knob_parses_good_values(name, raw, value):
    parsed = KNOBS[name].parse(raw, "test")
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("name", COUNTS)
@pytest.mark.parametrize("raw", BAD)
def test_each_knob_names_itself_and_the_fix(name, raw):
    with pytest.raises(ConfigError) as info:
        KNOBS[name].parse(raw, "some.toml")
    assert info.value.message.startswith(f"some.toml: knob '{name}': expected a positive integer")
    assert f"set {name} = {suggested(info.value.hint, name)}" in info.value.hint
    assert f'{name} = "none"' in info.value.hint


def suggested(hint: str, name: str) -> int:
    """The value a hint suggests (``set window = 2048 (...)``)."""
    import re

    return int(re.search(rf"set {name} ?= ?(\d+)", hint).group(1))


@pytest.mark.parametrize("name", COUNTS)
@pytest.mark.parametrize("block", [None, 16, 32, 4096])
def test_a_hint_suggests_a_value_the_server_takes(name, block):
    """--set window=abc once suggested window = 8, which SGLang then refuses (block size 16)."""
    with pytest.raises(ConfigError) as info:
        KNOBS[name].parse("abc", "--set", block_size=block)
    value = suggested(info.value.hint, name)
    assert KNOBS[name].parse(str(value), "--set") == value
    assert not window_too_small({name: value}, block or 16)
    config = ServerConfig(block_size=block)
    assert check_knob_texts({name: str(value)}, config).problems == {}  # the editor takes it too
    assert name in check_knob_texts({name: "abc"}, config).problems


def test_the_window_hint_names_the_block_size():
    with pytest.raises(ConfigError) as info:
        KNOBS["window"].parse("abc", "editor", block_size=32)
    assert "set window = 2048 (an integer >= the block size, 32)" in info.value.hint
    assert "window = 8 " not in info.value.hint


def test_the_suggested_window_passes_the_launch_plan(tmp_path):
    """The real check before a restart: plan_launch against the simulator's --help."""
    from backends.knobs.plan import plan_launch
    from backends.drivers.spawn import SimDriver

    with pytest.raises(UsageError) as info:
        parse_set("window=abc")
    value = suggested(info.value.hint, "window")
    config = ServerConfig().with_knobs({"window": value})
    backend = SimDriver(config)
    plan = plan_launch(config, backend.learn_help().text, backend.command_prefix())
    assert plan.argv[plan.argv.index("--speculative-draft-window-size") + 1] == str(value)


@pytest.mark.parametrize("name", COUNTS)
def test_the_same_rule_holds_in_config_set_and_editor(name):
    with pytest.raises(ConfigError, match=f"cfg.toml: knob '{name}'"):
        config_from_dict({"knobs": {name: True}}, "cfg.toml")
    assert config_from_dict({"knobs": {name: 64}}, "cfg.toml").knobs[name] == 64
    with pytest.raises(UsageError, match=f"--set: knob '{name}'"):
        parse_set(f"{name}=true")
    assert parse_set(f"{name}=none") == (name, None)
    errors = check_knob_texts({name: "-3"}, ServerConfig()).problems
    assert f"set {name} = {KNOBS[name].example}" in errors[name]
    assert check_knob_texts({name: "64"}, ServerConfig()).problems == {}


@pytest.mark.parametrize("raw, value", GENERIC_GOOD)
def test_a_mapped_knob_takes_any_scalar(raw, value):
    spec = knob_spec("mem", KnobRoute("mem", flag="--mem-fraction-static"))
    parsed = spec.parse(raw)
    assert parsed == value and type(parsed) is type(value)
    assert spec.effective_key is None and "--mem-fraction-static" in spec.help


@pytest.mark.parametrize("raw, fix", GENERIC_BAD)
def test_a_mapped_knob_names_itself_and_the_fix(raw, fix):
    with pytest.raises(ConfigError) as info:
        knob_spec("mem").parse(raw, "cfg.toml")
    assert "knob 'mem'" in info.value.message and fix in info.value.hint


@pytest.mark.parametrize("spec", KNOBS.values(), ids=list(KNOBS))
def test_each_knob_has_one_help_line_and_a_server_key_that_maps_back(spec):
    line = spec.describe()
    assert "\n" not in line and spec.unit in line and spec.none_means in line
    assert knob_form().help[spec.name] == line
    if spec.effective_key:
        assert knob_for_effective_key(spec.effective_key) == spec.name
        assert spec.effective_key in expected_reports({spec.name: spec.hint_value}, None)
    assert ServerConfig().knobs.get(spec.name) == spec.default
    assert (spec.name in DEFAULT_KNOBS) == (spec.pinned or spec.default is not None)


def test_the_table_says_what_the_server_reports():
    assert {n: s.effective_key for n, s in KNOBS.items()} == {
        "budget": "budget", "topk": None, "window": "window_size", "block_size": "block_size", "spec_v2": "spec_v2",
        "draft_kv_ratio": "draft_kv_ratio", "draft_swa_pool": "draft_swa_pool"}
    assert KNOBS["budget"].unset_is_default and not KNOBS["window"].unset_is_default
    assert knob_for_effective_key("block_size") == "block_size"  # derived settings keep their key


SHIPPED_NAMES = ("budget", "topk", "window", "block_size", "spec_v2", "draft_kv_ratio", "draft_swa_pool")


def test_known_knobs_are_the_table_then_the_config_map():
    assert known_knobs({}) == SHIPPED_NAMES
    assert known_knobs({"mem": None, "window": None}) == (*SHIPPED_NAMES, "mem")
    with pytest.raises(ConfigError, match=r"\[knobs\] frob: unknown knob"):
        config_from_dict({"knobs": {"frob": 1}}, "cfg.toml")


def test_window_is_an_integer_not_a_bool():
    assert window_too_small({"window": 8}, 16) and not window_too_small({"window": 16}, 16)
    assert not window_too_small({"window": True}, 16) and not window_too_small({"window": None}, 16)
    assert expected_reports({"window": True, "budget": False}, None)["window_size"] is None
    assert expected_reports({"window": 1024}, 8) == {"budget": None, "window_size": 1024, "compact_cache": True,
                                                     "block_size": 8, "spec_v2": None, "draft_kv_ratio": None,
                                                     "draft_swa_pool": None}


def test_editor_checks_the_window_against_the_block_size():
    problems = check_knob_texts({"window": "8"}, ServerConfig()).problems
    assert problems == {"window": "must be >= 16 (the block size), or none"}
    assert check_knob_texts({"window": "8"}, ServerConfig(block_size=8)).problems == {}


def test_editor_reads_a_mapped_knob_with_the_generic_spec():
    config = ServerConfig(knob_map={"mem": KnobRoute("mem", env="MEM")})
    assert check_knob_texts({"mem": "0.8"}, config).problems == {}
    assert "env MEM" in knob_form(config).help["mem"]


def test_help_lists_every_knob():
    from tui.commands._server import add_knob_arguments

    parser = argparse.ArgumentParser(epilog="examples:", formatter_class=argparse.RawDescriptionHelpFormatter)
    add_knob_arguments(parser)
    text = parser.format_help()
    for spec in KNOBS.values():
        assert f"  {spec.name:<16}{spec.describe()}" in text


def test_spec_is_frozen():
    with pytest.raises(AttributeError):
        KNOBS["window"].name = "w"  # type: ignore[misc]
    assert isinstance(knob_spec("window"), KnobSpec) and knob_spec("window") is KNOBS["window"]


def test_set_window_abc_on_the_command_line_suggests_a_valid_window(state_dir):
    from tests.helpers import run_ddtune

    out = run_ddtune("up", "--set", "window=abc")
    assert out.returncode == 2
    assert "hint: --set window=2048 (an integer >= the block size, 16), or --set window=none" in out.stderr
    assert "window = " not in out.stderr  # a flag's hint speaks flag syntax, never TOML (issue 22 item 8)


def test_hints_speak_the_syntax_of_where_the_value_came_from(tmp_path):
    """--set gets ``--set window=2048``; the config file gets ``window = 2048`` under [knobs]."""
    with pytest.raises(UsageError) as flag:
        parse_set("budget=zero")
    assert flag.value.hint.startswith("--set budget=8 ") and " = " not in flag.value.hint
    path = tmp_path / "ddtune.toml"
    path.write_text('[knobs]\nbudget = "zero"\n')
    from backends.knobs.config import load_config

    with pytest.raises(ConfigError) as toml:
        load_config(str(path))
    assert "budget = 8 under [knobs]" in toml.value.hint and "--set" not in toml.value.hint

"""Config and preset loading: the issue's example works, and every error names file, field and fix."""

import pytest

from backends.config import (
    ServerConfig, config_from_dict, load_config, load_preset, parse_set, preset_names,
)
from backends.errors import ConfigError, UsageError

ISSUE_EXAMPLE = """
[server]
backend = "sim"          # sglang | systemd | endpoint | sim
python = "python3"       # the interpreter that has sglang (sglang backend)
model = "demo"
draft_model = "demo-draft"
port = 30000
extra_args = ["--sim-load-seconds", "3"]
ready_timeout_s = 3600
[knobs]
budget = 8
topk = 4
window = 2048            # or "none"
"""


def write(tmp_path, text):
    path = tmp_path / "ddtune.toml"
    path.write_text(text)
    return path


def test_issue_example_loads(tmp_path):
    cfg = load_config(write(tmp_path, ISSUE_EXAMPLE))
    assert cfg.backend == "sim" and cfg.model == "demo" and cfg.draft_model == "demo-draft"
    assert cfg.port == 30000 and cfg.ready_timeout_s == 3600.0
    assert cfg.extra_args == ("--sim-load-seconds", "3")
    assert cfg.knobs == {"budget": 8, "topk": 4, "window": 2048}
    assert cfg.base_url == "http://127.0.0.1:30000"


def test_window_none_clears(tmp_path):
    cfg = load_config(write(tmp_path, '[knobs]\nwindow = "none"\n'))
    assert cfg.knobs["window"] is None


def test_no_config_is_the_simulator(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    cfg = load_config(None)
    assert cfg == ServerConfig()
    assert cfg.backend == "sim" and cfg.model == "demo"


def test_cwd_config_is_found(tmp_path, monkeypatch):
    write(tmp_path, '[server]\nport = 31234\n')
    monkeypatch.chdir(tmp_path)
    assert load_config(None).port == 31234


@pytest.mark.parametrize("text, field, fix", [
    ('[server]\nport = "abc"\n', "[server] port", "port = 30000"),
    ('[server]\nport = 70000\n', "[server] port", "1 to 65535"),
    ('[server]\nbackend = "docker"\n', "[server] backend", "sglang, systemd, endpoint, sim"),
    ('[server]\nprot = 1\n', "[server] prot", "known fields"),
    ('[knobs]\nbudget = 0\n', "knob 'budget'", "integer > 0"),
    ('[knobs]\ntopk = -1\n', "knob 'topk'", "integer > 0"),
    ('[knobs]\nwindow = "big"\n', "knob 'window'", '"none"'),
    ('[knobs]\nwindow = 1.5\n', "knob 'window'", "integer"),
    ('[knobs]\nfoo = 3\n', "[knobs] foo", "[knobs.map]"),
    ('[knobs.map]\nfoo = { flag = "x" }\n', "[knobs.map] foo.flag", "--"),
    ('[knobs.map]\nfoo = { flag = "--x", env = "X" }\n', "[knobs.map] foo", "flag = \"--my-flag\""),
    ('[server]\nbackend = "systemd"\n', "[server] unit", "unit ="),
    ('[server]\nbackend = "endpoint"\n', "[server] url", "url ="),
    ('[server]\nextra_args = [1, 2]\n', "[server] extra_args", "extra_args = ["),
    ('[server]\nready_timeout_s = 0\n', "[server] ready_timeout_s", "seconds"),
    ('[serve]\nport = 1\n', "[serve]", "[server]"),
])
def test_errors_name_file_field_and_fix(tmp_path, text, field, fix):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert str(path) in err.message
    assert field in err.message
    assert fix in (err.hint or "")
    assert err.exit_code == 2


def test_bad_toml_names_the_file(tmp_path):
    path = write(tmp_path, "[server\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in info.value.message and "TOML" in info.value.message


def test_user_knob_with_mapping(tmp_path):
    cfg = load_config(write(tmp_path, '[knobs]\nmem = "0.8"\n[knobs.map]\nmem = { flag = "--mem-fraction-static" }\n'))
    assert cfg.knobs["mem"] == "0.8"
    assert cfg.knob_map["mem"].flag == "--mem-fraction-static"


def test_config_hash_changes_with_knobs():
    base = ServerConfig()
    assert base.config_hash() == ServerConfig().config_hash()
    assert base.with_knobs({"window": 1024}).config_hash() != base.config_hash()


def test_shipped_presets_include_the_field_configs():
    names = set(preset_names())
    assert {"b8-t4-w2048", "b8-t4-nowindow", "b16-t4-w2048", "b4-t4-w2048", "b12-t6-w2048"} <= names
    assert load_preset("b12-t6-w2048") == {"budget": 12, "topk": 6, "window": 2048}
    assert load_preset("b8-t4-nowindow") == {"budget": 8, "topk": 4, "window": None}


def test_unknown_preset_lists_the_shipped_ones():
    with pytest.raises(UsageError) as info:
        load_preset("b99")
    assert "b8-t4-w2048" in info.value.hint


def test_preset_file_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("[knobs]\nwindow = 4096\n")
    assert load_preset(str(path)) == {"window": 4096}


@pytest.mark.parametrize("expr, want", [
    ("window=1024", ("window", 1024)), ("window=none", ("window", None)), ("budget= 8", ("budget", 8)),
    ("flag=true", ("flag", True)), ("name=abc", ("name", "abc")),
])
def test_parse_set(expr, want):
    assert parse_set(expr) == want


@pytest.mark.parametrize("expr", ["window", "=3", "window=0", "topk=x"])
def test_parse_set_rejects(expr):
    with pytest.raises(UsageError):
        parse_set(expr)


def test_config_from_dict_defaults_keep_window():
    cfg = config_from_dict({}, "x.toml")
    assert cfg.knobs == {"budget": None, "topk": None, "window": 2048}

"""Config and preset loading: the issue's example works, and every error names file, field and fix."""

import pytest

from backends.knobs.config import (
    ServerConfig, config_from_dict, load_config, load_preset, parse_set, preset_names,
)
from backends.core.errors import ConfigError, UsageError

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


@pytest.mark.parametrize("text, field, fix", [
    ('[server]\nextra_args = "--foo \\"bar"\n', "[server] extra_args", "close the quote"),
    ('[knobs]\nmap = 5\n', "[knobs] map", "[knobs.map]"),
    ('[knobs.map]\nfoo = 5\n', "[knobs.map] foo", 'flag = "--my-flag"'),
    ('[knobs.map]\nfoo = { flag = 5 }\n', "[knobs.map] foo.flag", 'flag = "--my-flag"'),
    ('[knobs.map]\nfoo = { env = ["X"] }\n', "[knobs.map] foo.env", 'env = "MY_ENV_VAR"'),
    ('[knobs.map]\nfoo = { env = "A=B" }\n', "[knobs.map] foo.env", 'env = "MY_ENV_VAR"'),
    ('[knobs.map]\nfoo = { flag = "--x", offset = "1" }\n', "[knobs.map] foo.offset", "offset = 1"),
    ('[knobs.map]\nfoo = { flag = "--x", switch = 3 }\n', "[knobs.map] foo.switch", "switch ="),
    ('[knobs.map]\nfoo = { flag = "--x", algorithm = 5 }\n', "[knobs.map] foo.algorithm", 'algorithm = "DFLASH"'),
    ('[knobs]\nfoo = [1]\n[knobs.map]\nfoo = { flag = "--x" }\n', "knob 'foo'", '"none"'),
    ('[knobs]\nfoo = "a\\u0000b"\n[knobs.map]\nfoo = { env = "X" }\n', "knob 'foo'", "remove it"),
    ('[server.env]\nA = "x\\u0000y"\n', "[server.env] A", "remove it"),
    ('[server.env]\n"A\\u0000" = "x"\n', '[server.env] "A\\u0000"', "remove it"),
    ('[server.env]\nA = true\n', "[server.env] A", "quote"),
    ('[server]\nmodel = "m\\u0000"\n', "[server] model", "remove it"),
    ('[server]\nextra_args = ["--a\\u0000"]\n', "[server] extra_args[0]", "remove it"),
    ('[server]\nready_timeout_s = nan\n', "[server] ready_timeout_s", "seconds"),
    ('[server]\nready_timeout_s = inf\n', "[server] ready_timeout_s", "seconds"),
    ('[server]\nstop_timeout_s = -1\n', "[server] stop_timeout_s", "seconds"),
    ('[server]\nstop_timeout_s = true\n', "[server] stop_timeout_s", "seconds"),
    ('[server]\nblock_size = 0\n', "[server] block_size", "block_size = 16"),
    ('[server]\nport = 0\n', "[server] port", "port = 30000"),
    ('[server]\n"a\\nb" = 1\n', '[server] "a\\nb"', "known fields"),
    ('[knobs]\nwindow = "abc"\n', "knob 'window'", '"none"'),
    ('[knobs]\nbudget = -1\n', "knob 'budget'", "integer > 0"),
    ('[knobs]\ntopk = true\n', "knob 'topk'", "integer > 0"),
])
def test_wrong_types_and_values_name_the_field(tmp_path, text, field, fix):
    """Each of these raised a traceback (AttributeError, ValueError) or was accepted and broke
    later (NaN timeout, NUL byte at spawn): now a ConfigError naming the field, on one line."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert f"{path}: {field}:" in err.message and "\n" not in err.message
    assert fix in (err.hint or "")


@pytest.mark.parametrize("data, what", [
    (b"\xff\xfe[\x00s\x00]\x00", "UTF-16"),
    ("[server]\nport = 30000\n".encode("utf-16"), "UTF-16"),
    (b"[server]\nmodel = \"\xc3\x28\"\n", "not UTF-8"),
    (bytes(range(256)), "not UTF-8"),
])
def test_config_and_preset_that_are_not_utf8_name_the_file(tmp_path, data, what):
    for load in (load_config, load_preset):
        path = tmp_path / "bad.toml"
        path.write_bytes(data)
        with pytest.raises(ConfigError) as info:
            load(str(path))
        assert info.value.message.startswith(f"{path}: not a UTF-8 text file") and what in info.value.message
        assert "UTF-8" in info.value.hint


def test_utf8_bom_is_read(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf[server]\nport = 31000\n")
    assert load_config(path).port == 31000


def test_config_that_is_a_directory_names_it(tmp_path):
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)


@pytest.mark.parametrize("key", ["python", "model", "draft_model"])
def test_empty_interpreter_or_model_is_refused(tmp_path, key):
    """python = "" reached subprocess and died there with PermissionError."""
    with pytest.raises(ConfigError, match=rf"\[server\] {key}: is empty"):
        load_config(write(tmp_path, f'[server]\n{key} = " "\n'))


@pytest.mark.parametrize("server, backend, named", [
    ('python = "/opt/sglang/bin/python"\nmodel = "Qwen/Qwen3-8B"', "sglang", "'python' and 'model'"),
    ('model = "Qwen/Qwen3-8B"', "sglang", "'model'"),
    ('python = "/opt/sglang/bin/python"', "sglang", "'python'"),
    ('unit = "sglang.service"', "systemd", "'unit'"),
    ('url = "http://127.0.0.1:30000"', "endpoint", "'url'"),
    ('binary = "/opt/llama.cpp/bin/llama-server"\nmodel = "/m/q.gguf"', "llamacpp", "'binary'"),
])
def test_a_config_without_backend_runs_what_it_names_and_says_so(tmp_path, server, backend, named):
    """Issue 32: a config with python and model but no backend silently ran the simulator; a user on
    a GPU box measured it and believed it."""
    cfg = load_config(write(tmp_path, f"[server]\n{server}\n"))
    assert cfg.backend == backend
    assert cfg.inferred is not None and f"names {named}, so it runs {backend}" in cfg.inferred
    assert f'backend = "{backend}"' in cfg.inferred and str(tmp_path / "ddtune.toml") in cfg.inferred


def test_only_a_written_sim_or_no_config_is_the_simulator_unannounced(tmp_path):
    assert load_config(write(tmp_path, '[server]\nbackend = "sim"\nmodel = "demo"\n')).inferred is None
    assert ServerConfig().inferred is None  # no config: the console's own line says it is the simulator
    bare = load_config(write(tmp_path, "[knobs]\nwindow = 1024\n"))
    assert bare.backend == "sim" and "it is the built-in SGLang simulator" in (bare.inferred or "")


def test_an_inferred_backend_is_the_written_one_for_the_server(tmp_path):
    """The record and the ETAs of a config do not change when its inferred backend is written out."""
    inferred = load_config(write(tmp_path, '[server]\nmodel = "m"\n'))
    written = load_config(write(tmp_path, '[server]\nbackend = "sglang"\nmodel = "m"\n'))
    assert inferred.config_hash() == written.config_hash() and inferred.startup_key() == written.startup_key()


def test_a_url_that_ends_in_v1_is_the_server_s_base(tmp_path):
    """Issue 32: the OpenAI-style base URL people paste; ddtune joins /v1/models to the server's base."""
    cfg = load_config(write(tmp_path, '[server]\nbackend = "endpoint"\nurl = "http://10.0.0.5:30000/v1/"\n'))
    assert cfg.base_url == "http://10.0.0.5:30000"

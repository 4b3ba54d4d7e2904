"""Issue 19, item 4: the API key is in no output ddtune makes. SGLang prints its whole
``server_args`` at startup, key included (the simulator does too, in both dump styles); the one
log reader masks it (backends.logs.splitter), errors mask it (backends.core.errors), doctor prints the
launch command redacted, and a headless command's stdout and stderr mask every key it knows."""

from __future__ import annotations

import pytest

from backends.core import apikey
from backends.core.apikey import mask
from backends.core.errors import ConfigError
from backends.logs.splitter import split_lines
from tests.backends.lifecycle_support import write_config
from tests.helpers import run_ddtune

KEY = "sk-mask-7d41c9e0b2"


@pytest.mark.parametrize("text, shown", [
    (f"server_args=ServerArgs(model_path='m', api_key='{KEY}', admin_api_key=None, port=1)",
     "server_args=ServerArgs(model_path='m', api_key='***', admin_api_key=None, port=1)"),
    (f"server_args={{'model_path': 'm', 'api_key': '{KEY}', 'admin_api_key': None}}",
     "server_args={'model_path': 'm', 'api_key': '***', 'admin_api_key': None}"),
    (f'{{"api_key": "{KEY}", "port": 1}}', '{"api_key": "***", "port": 1}'),
    (f"launch_server --api-key {KEY} --port 1", "launch_server --api-key *** --port 1"),
    (f"--admin-api-key={KEY}", "--admin-api-key=***"),
    (f"['--api-key', '{KEY}', '--port']", "['--api-key', '***', '--port']"),
    (f"Authorization: Bearer {KEY}", "Authorization: Bearer ***"),
    (f"DDTUNE_API_KEY={KEY} ddtune up", "DDTUNE_API_KEY=*** ddtune up"),
    ("api_key=None, admin_api_key=None", "api_key=None, admin_api_key=None"),
    ("Decode batch, #running-req: 1, accept len: 6.12", "Decode batch, #running-req: 1, accept len: 6.12"),
])
def test_mask_hides_the_key_where_sglang_and_argv_print_it(text, shown):
    assert mask(text) == shown


def test_a_known_key_is_masked_anywhere_and_a_short_one_is_not_everywhere():
    assert mask(f"token {KEY}x rejected", [KEY]) == "token ***x rejected"
    apikey.remember("ab")  # too short to hunt for in free text: it would garble every line
    assert mask("a tab and a cab") == "a tab and a cab"


def test_log_lines_and_errors_come_out_masked():
    apikey.remember(KEY)
    assert split_lines(f"server_args=ServerArgs(api_key='{KEY}')\nsaw {KEY} in a header\n") == [
        "server_args=ServerArgs(api_key='***')", "saw *** in a header"]
    err = ConfigError(f"cannot use --api-key {KEY}", hint=f"unset {KEY}")
    assert KEY not in str(err) and err.message == "cannot use --api-key ***"


@pytest.mark.parametrize("version, dumped", [("0.5.11", f"api_key='{KEY}'"), ("0.5.23", f"'api_key': '{KEY}'")])
def test_a_simulator_launched_with_a_key_leaks_it_in_no_command(tmp_path, state_dir, groups, version, dumped):
    cfg = write_config(tmp_path, extra=("--sim-load-seconds", "0.1", "--sim-version", version, "--api-key", KEY))
    up = run_ddtune("--config", str(cfg), "up", DDTUNE_API_KEY="")
    groups.track_state()
    assert up.returncode == 0, up.stderr
    logs = sorted((state_dir / "logs").glob("server-*.log"))
    assert dumped in logs[-1].read_text()  # the server's own log holds SGLang's dump, key and all
    outputs = {"up": up}
    for name, argv in {"status": ["status"], "status --json": ["status", "--json"], "doctor": ["doctor"],
                       "inspect": ["inspect", str(logs[-1])], "inspect --json": ["inspect", str(logs[-1]), "--json"],
                       "bench": ["bench", "--contexts", "60", "--concurrency", "1", "--requests-per-cell", "1",
                                 "--max-tokens", "8", "--json"],
                       "down": ["down"]}.items():
        outputs[name] = run_ddtune("--config", str(cfg), *argv, timeout=120, DDTUNE_API_KEY="")
    for name, out in outputs.items():
        assert KEY not in out.stdout + out.stderr, name
        assert "Traceback" not in out.stderr, (name, out.stderr[-2000:])
    assert "--api-key ***" in outputs["doctor"].stdout  # the launch command, redacted
    for holder in (p for p in state_dir.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()):
        assert holder.name.startswith("server") and holder.suffix == ".log" or holder.name == "launch.json", holder


def test_a_key_given_on_the_command_line_is_masked_in_what_the_command_prints(tmp_path, state_dir):
    out = run_ddtune("bench", "--url", f"http://127.0.0.1:9/{KEY}", "--api-key", KEY, "--contexts", "60",
                     "--concurrency", "1", DDTUNE_API_KEY="")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert KEY not in out.stdout + out.stderr and "***" in out.stderr

"""The CLI contract of design.md section 3, run in-process (tests.helpers.run_cli)."""

import tomllib

from tests.helpers import REPO, run_cli
from tui import __version__
from tui.cli import COMMANDS


def test_help_lists_every_command_with_examples():
    out = run_cli("--help")
    assert out.returncode == 0
    for name in COMMANDS:
        assert f"    {name} " in out.stdout
    assert "examples:" in out.stdout


def test_version_is_pyproject_s_as_installed():
    # the editable install's metadata says pyproject's version (reinstall after changing it)
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    out = run_cli("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"ddtune {declared}" == f"ddtune {__version__}"


def test_unknown_command_exits_2_with_hint():
    out = run_cli("frobnicate")
    assert out.returncode == 2
    assert "invalid choice: 'frobnicate'" in out.stderr
    assert "hint: run 'ddtune --help'" in out.stderr


def test_bad_option_exits_2_with_hint():
    out = run_cli("status", "--no-such-option")
    assert out.returncode == 2
    assert "unrecognized arguments: --no-such-option" in out.stderr
    assert "hint:" in out.stderr


def test_missing_config_file_is_named_before_and_after_the_command(tmp_path):
    missing = str(tmp_path / "nope.toml")
    for argv in (("--config", missing, "status"), ("status", "--config", missing)):
        out = run_cli(*argv)
        assert out.returncode == 2, argv
        assert f"--config: no such file: {missing}" in out.stderr


def test_sweep_help_says_one_thing_about_the_server_at_the_end():
    """Issue 22 item 8: the flag's help and the epilog used to disagree (stopped vs returned to the
    config it ran before). The code (ManagedController.shutdown) returns it; both now say so."""
    import re

    out = run_cli("sweep", "--help")
    text = re.sub(r"\s+", " ", out.stdout)
    assert out.returncode == 0
    assert "The server is stopped at the end" not in text
    assert "the config it ran before the sweep, or stop it when none was running" in text
    assert "left as the sweep found it: back on the knobs it ran before" in text


def test_selftest_says_what_it_takes_on_a_gpu_box():
    """Issue 32: --help and the README said 'about a minute'; on a real SGLang 0.5.17 on an H200 it took
    157 s, two tiny server starts of ~60 s each most of it."""
    out = run_cli("selftest", "--help").stdout
    assert "about 2.5 minutes on a GPU box" in " ".join(out.split()) and "157 s" in out
    for doc in ("README.md", "docs/selftest.md"):
        text = " ".join((REPO / doc).read_text().split())
        assert "about a minute" not in text and ("~2.5 min" in text or "157 s" in text), doc

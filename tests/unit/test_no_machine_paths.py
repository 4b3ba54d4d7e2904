"""What the console shows names no path of this machine where it need not (the README's startup
screenshot showed ddtune's own venv, the sweep and search shots a /tmp state folder): the launch note
writes ddtune's own interpreter as python (keys still redacted, a configured interpreter whole), and a
run folder under the home folder reads ~/... (pasteable: the shell expands it)."""

import sys

from backends.core.apikey import shown_argv
from workloads.runs.store import home_short


def test_ddtune_s_own_interpreter_is_python_and_keys_stay_hidden():
    assert shown_argv([sys.executable, "-m", "backends.sim", "--api-key", "s3cret"]) == \
        ("python", "-m", "backends.sim", "--api-key", "***")
    assert shown_argv(["/opt/sglang/bin/python", "-m", "sglang.launch_server"])[0] == "/opt/sglang/bin/python"


def test_a_run_folder_under_home_reads_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home_short(tmp_path / ".local/state/ddtune/runs/x-sweep") == "~/.local/state/ddtune/runs/x-sweep"
    assert home_short(f"{tmp_path}x/runs") == f"{tmp_path}x/runs"  # a sibling that only shares the prefix
    assert home_short("/srv/runs/x") == "/srv/runs/x"

"""Issue 32: a config without ``backend`` is never a silent simulator, on any command's output.
In-process CLI calls: the process itself is not the subject."""

from __future__ import annotations

import contextlib
import io

from tui import cli


def ddtune(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_doctor_reports_the_inferred_backend(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[server]\npython = "/nonexistent/python"\nmodel = "Qwen/Qwen3-8B"\n')
    code, out, _ = ddtune("--config", str(config), "doctor")
    lines = out.splitlines()
    assert lines[0] == f"[ok  ] config: {config}, backend sglang (inferred: no backend written), model Qwen/Qwen3-8B"
    assert lines[1].startswith(f"[warn] backend: {config}: no [server] backend; it names 'python' and 'model'")
    assert "backend sim" not in out


def test_a_headless_command_says_the_inferred_backend_once(tmp_path):
    from tui.commands import _server

    config = tmp_path / "c.toml"
    config.write_text("[server]\nport = 31999\n")
    _server._SAID.discard(str(config))
    code, out, err = ddtune("--config", str(config), "status")
    assert code == 0 and "backend:    sim" in out
    assert err.count("no [server] backend, python or model: it is the built-in SGLang simulator") == 1

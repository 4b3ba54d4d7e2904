"""What the layer contracts cannot see. The layer rules themselves (backends never imports workloads
or tui, neither loads the UI stack, widgets and screens drive no engine) are import-linter
contracts in pyproject.toml, checked by tests/unit/test_tooling.py; this file checks what happens
at run time: the headless entry point defers the console's imports."""

import subprocess
import sys

from tests.helpers import REPO, ddtune_env


UI_STACK = ("textual", "rich", "plotext", "click", "pygments")


def ui_modules_after(code: str) -> list[str]:
    """The modules of the UI stack that a fresh interpreter holds after running ``code``."""
    probe = code + f"\nimport sys\nprint(','.join(sorted(m for m in sys.modules if m.split('.')[0] in {UI_STACK!r})))\n"
    out = subprocess.run([sys.executable, "-c", probe], env=ddtune_env(), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_headless_help_loads_no_textual():
    assert ui_modules_after("from tui import cli\ncli.build_parser()") == []


def test_the_http_client_loads_no_ui_stack_even_beside_click():
    """httpx imports click, pygments and rich for its command-line tool whenever click is installed
    (an SGLang environment has it through uvicorn; this one through import-linter): the layers that
    talk HTTP must still load none of the UI stack, nor pay for it."""
    assert ui_modules_after(
        "import importlib.util\n"
        "assert importlib.util.find_spec('click') and importlib.util.find_spec('rich'), 'the test needs both'\n"
        "import backends.drivers.spawn, backends.launch.readiness, workloads.client.stream") == []

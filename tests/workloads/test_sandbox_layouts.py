"""Pass by lookup (issue 28): an answer that computes nothing but reads the hidden tests' expected
values from wherever ddtune is installed. Each install layout is built for real under /usr/local/src
(tests/workloads/sandbox_layouts.py) and a grader runs from it, in bubblewrap: the answer fails, and
the canaries ``ddtune doctor`` places beside the problems and the packages are not found. Run on the
host, outside the sandbox, the same answer passes every test: the lookup is real."""

import json
import os
import subprocess
import sys

import pytest

from tests.workloads.sandbox_layouts import Layout, Layouts, shared
from workloads.grading import sandbox_isolation, sandbox_view
from workloads.grading.sandbox import run_tests

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the layouts are built under /usr/local/src, as root")

# Reads every file of the layouts (a checkout with its .git objects inflated, each site-packages
# ddtune went to) and keeps each ``fib(N) == V`` it finds: the function only looks V up.
LOOKUP = r"""
import os, re, zlib
FOUND = {}
for folder, _, names in (step for target in TARGETS for step in os.walk(target)):
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if "/.git/objects/" in path:
            try:
                data = zlib.decompress(data)
            except zlib.error:
                pass
        for n, value in re.findall(rb"fib\((\d+)\) == (\d+)", data):
            FOUND[int(n)] = int(value)
def fib(n):
    return FOUND.get(n, -1)
"""

GRADER = """
import json, sys
from backends.core.paths import presets_dir
from workloads.grading.problems import load_problems, select_problems
from workloads.grading.sandbox import SandboxLimits, run_tests
from workloads.grading.sandbox_isolation import hidden_tests
fib = select_problems(load_problems(), ["fib"])[0]
result = run_tests(sys.argv[1], fib.function, fib.tests, SandboxLimits(wall_s=30))
hidden = hidden_tests()
host = {}
exec(sys.argv[1], host)  # the same answer outside the sandbox
print(json.dumps({"presets": str(presets_dir()), "verdict": result.verdict, "detail": result.detail,
                  "hidden": hidden.active, "hidden_detail": hidden.detail,
                  "host_passes": all(eval(test, host) for test in fib.tests)}))
"""


@pytest.fixture(scope="session")
def layouts(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    with shared(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) as built:
        sys.stderr.write(f"\nddtune layouts built in {built.build_s:.1f} s under {built.root}\n")
        yield built


def grade_from(layout: Layout, layouts: Layouts, cwd) -> dict:
    """The lookup answer graded by a ddtune that runs from ``layout``, and run on the host."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if layout.pythonpath:
        env["PYTHONPATH"] = layout.pythonpath
    code = f"TARGETS = {list(layouts.targets)!r}\n{LOOKUP}"
    done = subprocess.run([layout.python, "-c", GRADER, code], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["editable", "pipx", "interpreter-site", "pythonpath"])
def test_a_lookup_answer_fails_from_every_install_layout(layouts, name, tmp_path):
    layout = layouts.get(name)
    seen = grade_from(layout, layouts, tmp_path)
    assert seen["presets"] == layout.presets
    assert seen["host_passes"] is True  # the host's files do give the answers away
    assert (seen["verdict"], seen["hidden"]) == ("fail", True), seen
    assert "canaries" in seen["hidden_detail"]


def test_a_checkout_inside_a_bound_stdlib_folder_shows_none_of_ddtune(layouts, monkeypatch):
    # Were ddtune's checkout inside a folder the view binds whole (a stdlib folder: pip's target where
    # site-packages sits inside the stdlib), its packages and its .git are covered. Its README stays
    # visible: the folder really was bound.
    clone = layouts.clone
    child_paths = sandbox_view._child_paths
    monkeypatch.setattr(sandbox_view, "_child_paths", lambda exe: ([*child_paths(exe)[0], str(clone)],
                                                                   child_paths(exe)[1]))
    monkeypatch.setattr(sandbox_view, "package_dirs", lambda: [clone / p for p in ("tui", "workloads", "backends",
                                                                                   "presets")])
    hidden = [clone / "presets" / "problems" / "coding.toml", clone / ".git" / "HEAD", clone / "tui" / "cli.py",
              clone / "workloads" / "grading" / "sandbox_child.py"]
    paths = [str(p) for p in hidden] + [str(clone / "README.md")]
    code = f"import os\ndef f(i):\n    return os.path.exists({paths!r}[i])"
    sandbox_view.view.cache_clear()
    sandbox_isolation.facts.cache_clear()
    try:  # one test a path: a failure names the path that was (or was not) there
        result = run_tests(code, "f", [f"f({i}) == {i == len(hidden)}" for i in range(len(paths))])
        assert result.verdict == "pass", (result.detail, paths)
    finally:
        sandbox_view.view.cache_clear()
        sandbox_isolation.facts.cache_clear()

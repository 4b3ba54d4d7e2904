"""Helpers for the sandbox tests: find processes by a token in their command line, run a grader
as its own process (so an attack on the grader cannot take pytest with it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import psutil

from tests.helpers import REPO, ddtune_env


def token() -> str:
    return f"ddtune-attack-{uuid.uuid4().hex[:12]}"


def with_token(tok: str) -> list[int]:
    """Pids of live processes whose command line holds ``tok``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and tok in " ".join(proc.info["cmdline"] or []):
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


def wait_until(predicate, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def sleeper_exec(tok: str) -> str:
    """Answer code that turns its process into a 60 s sleeper with ``tok`` in its command line (the
    code holds the token in two halves, so a grader given this code in its argv does not match)."""
    return (f"import os, sys\ntok = {tok[:6]!r} + {tok[6:]!r}\n"
            f"os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', tok])\n")


GRADER = """
import json, os, sys
from workloads.grading.sandbox import SandboxLimits, run_tests
code, function, tests = json.loads(sys.argv[1])
code = code.replace("GRADER_PID", str(os.getpid())).replace("GRADER_PGID", str(os.getpgid(0)))
r = run_tests(code, function, tests, SandboxLimits(wall_s=20))
print(json.dumps({"verdict": r.verdict, "detail": r.detail}), flush=True)
"""


def grader_argv(code: str, function: str, tests: list[str]) -> list[str]:
    """A grader in its own interpreter; GRADER_PID and GRADER_PGID in ``code`` become its pid and group."""
    return [sys.executable, "-c", GRADER, json.dumps([code, function, tests])]


def run_grader(code: str, function: str, tests: list[str],
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(grader_argv(code, function, tests), env=ddtune_env(**(env or {})), cwd=REPO,
                          capture_output=True, text=True, timeout=120, start_new_session=True)


def verdict_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, f"the grader died ({done.returncode}): {done.stderr[-500:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def sandbox_dirs(path, prefix: str = "ddtune-sandbox-") -> list[str]:
    return sorted(p for p in os.listdir(path) if p.startswith(prefix))


def path_without_bwrap(folder) -> str:
    """A PATH that finds every program this one finds but bubblewrap: ``folder`` filled with links."""
    os.makedirs(folder)
    for where in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(where)
        except OSError:
            continue
        for name in names:
            link = os.path.join(folder, name)
            if name != "bwrap" and not os.path.lexists(link) and os.access(os.path.join(where, name), os.X_OK):
                os.symlink(os.path.join(where, name), link)
    return str(folder)

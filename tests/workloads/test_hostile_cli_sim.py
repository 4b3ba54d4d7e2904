"""Untrusted text is text (issue 19), headless: against a simulator that puts terminal escapes and
markup in what it sends (``--sim-hostile``), ``ddtune up``, ``status``, ``bench`` and ``eval`` print
none of the server's control bytes (no ESC, no C1), on stdout or stderr, and say what it said."""

from __future__ import annotations

import json
import re

from backends.sim.flags import HOSTILE
from tests.helpers import free_port, run_ddtune

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every C0 but \t and \n, DEL, C1
VISIBLE = "RED [@click=app.quit]quit[/]"                  # what the hostile text reads as, plain


def assert_plain(out) -> None:
    for name, text in (("stdout", out.stdout), ("stderr", out.stderr)):
        found = CONTROL.search(text)
        assert found is None, f"{name} holds {found.group()!r}: {text[max(0, found.start() - 80):found.end() + 80]!r}"


def test_up_and_status_print_a_hostile_fatal_line_plainly(tmp_path, state_dir):
    config = tmp_path / "ddtune.toml"
    args = json.dumps(["--sim-load-seconds", "0.05", "--sim-fail-at", "load", "--sim-hostile"])
    config.write_text(f'[server]\nbackend = "sim"\nport = {free_port()}\nextra_args = {args}\nready_timeout_s = 60\n')
    up = run_ddtune("--config", str(config), "up", timeout=90)
    assert up.returncode == 1 and VISIBLE in up.stderr, up.stderr
    assert_plain(up)
    status = run_ddtune("--config", str(config), "status", timeout=60)
    assert VISIBLE in status.stdout, status.stdout
    assert_plain(status)
    doc = run_ddtune("--config", str(config), "status", "--json", timeout=60)
    assert_plain(doc)                                   # JSON escapes what is left: \u001b, never the byte
    assert VISIBLE in json.loads(doc.stdout)["reason"]


def test_bench_and_eval_print_hostile_answers_and_error_bodies_plainly(start_sim):
    sim = start_sim("--sim-hostile", "--sim-step-ms", "0")
    bench = run_ddtune("bench", "--url", sim.url, "--contexts", "60", "--concurrency", "1", "--max-tokens", "64",
                       timeout=120)
    assert bench.returncode == 0, bench.stderr
    assert_plain(bench)
    evaluated = run_ddtune("eval", "--url", sim.url, "--problems", "fib", "--max-tokens", "2048", "--json",
                           timeout=120)
    assert evaluated.returncode == 0, evaluated.stderr
    assert_plain(evaluated)
    assert HOSTILE not in evaluated.stdout
    locked = start_sim("--sim-hostile", "--api-key", "sekret")   # a 401 whose body is hostile
    refused = run_ddtune("bench", "--url", locked.url, "--contexts", "60", "--concurrency", "1", timeout=60)
    # the body is JSON, so its escapes arrive as \u001b text (harmless); a raw one would be removed
    assert refused.returncode == 1 and "HTTP 401" in refused.stderr and "[@click=app.quit]quit[/]" in refused.stderr
    assert_plain(refused)

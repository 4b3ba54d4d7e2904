"""Issue 19, item 4: inputs that gave Python tracebacks, each run as the real ``ddtune`` process
against files in a temporary folder. Each must answer with one ``ddtune: error:`` line naming the
field (plus one ``hint:`` line with the fix), exit 2, and change nothing: no server started, no
state or log file written, no run file rewritten."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.helpers import run_ddtune

DEEP = "[" * 100_000 + "]" * 100_000             # json.loads: RecursionError
DEEPISH = "[" * 900 + "]" * 900                   # parses, then breaks whatever walks it recursively


def ddtune(tmp_path: Path, *argv: str):
    return run_ddtune(*argv, DDTUNE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "xdg"),
                      timeout=90)


def one_error(out, *needles: str, code: int = 2) -> str:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr[-2000:]
    assert out.returncode == code, (out.returncode, out.stderr[-2000:])
    lines = [line for line in out.stderr.splitlines() if not line.startswith(("usage:", " "))]
    first, *rest = lines
    assert first.startswith(("ddtune: error: ", "ddtune bench: error: ", "launch_server.py: error: ")), first
    assert len(first) < 400, first[:400]
    for needle in needles:
        assert needle in first, first
    assert len(rest) <= 1 and all(r.startswith("hint: ") for r in rest), rest
    return first


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root, by content hash (what ``changes nothing`` compares)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "lifecycle.lock"}


def config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "ddtune.toml"
    path.write_text(body)
    return path


# --- the config: a malformed URL, a port out of range, a 10 MB model -----------------------------

@pytest.mark.parametrize("body, field, problem", [
    ('[server]\nbackend = "endpoint"\nurl = "http://[::1"\n', "[server] url", "not a valid URL"),
    ('[server]\nbackend = "endpoint"\nurl = "http://127.0.0.1:99999"\n', "[server] url", "port is out of range"),
    ('[server]\nport = 99999\n', "[server] port", "99999 is out of range"),
    ('[server]\nhost = "[::1"\n', "[server] host", "not a host name"),
    ('[server]\nmodel = "' + "m" * 10_000_000 + '"\n', "[server] model", "10,000,000 characters"),
    ('[server]\nextra_args = ["--x", "' + "a" * 200_000 + '"]\n', "[server] extra_args[1]", "200,000 characters"),
], ids=["url-ipv6", "url-port", "port", "host", "model-10MB", "extra-arg-200k"])
@pytest.mark.parametrize("command", [["up"], ["status"], ["bench", "--contexts", "60", "--concurrency", "1"]],
                         ids=["up", "status", "bench"])
def test_a_bad_config_value_is_one_line_naming_the_field_and_starts_nothing(tmp_path, body, field, problem,
                                                                             command):
    cfg = config(tmp_path, body)
    out = ddtune(tmp_path, "--config", str(cfg), *command)
    one_error(out, f"{cfg}: {field}", problem)
    assert snapshot(tmp_path / "state") == {}  # no server.json, no log: nothing was launched


def test_doctor_names_a_malformed_url_in_its_config_check(tmp_path):
    cfg = config(tmp_path, '[server]\nbackend = "endpoint"\nurl = "http://[::1"\n')
    out = ddtune(tmp_path, "--config", str(cfg), "doctor")
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout, out.stderr[-2000:]
    assert out.stdout.splitlines()[0].startswith(f"[FAIL] config: {cfg}: [server] url: ")


def test_an_ipv6_host_is_a_valid_config(tmp_path):
    cfg = config(tmp_path, '[server]\nhost = "::1"\nport = 9\n')
    out = ddtune(tmp_path, "--config", str(cfg), "status", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["url"] == "http://[::1]:9"


@pytest.mark.parametrize("url, problem", [("http://[::1", "not a valid URL"),
                                          ("http://127.0.0.1:99999", "port is out of range")])
def test_a_bad_url_option_is_refused_by_name(tmp_path, url, problem):
    out = ddtune(tmp_path, "bench", "--url", url, "--contexts", "60", "--concurrency", "1")
    one_error(out, "argument --url", problem)


def test_the_simulator_refuses_a_port_out_of_range(tmp_path):
    out = ddtune(tmp_path, "sim", "--model-path", "demo", "--port", "99999")
    one_error(out, "argument --port", "99999 is out of range")


@pytest.mark.parametrize("argv", [["up", "--preset", "p" * 5000], ["sweep", "p" * 5000]], ids=["up", "sweep"])
def test_a_5000_character_preset_name_is_refused_by_name(tmp_path, argv):
    cfg = config(tmp_path, '[server]\nbackend = "endpoint"\nurl = "http://127.0.0.1:9"\n')
    out = ddtune(tmp_path, "--config", str(cfg), *argv)
    one_error(out, "--preset 'ppp", "5,000 characters")
    assert snapshot(tmp_path / "state") == {}


# --- JSON ddtune reads: nested past any sane depth ---------------------------------------------------

def bench_folder(root: Path, run: str | None = None, cells: str | None = None, responses: str | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "run.json").write_text(run or json.dumps({"kind": "bench", "attempts": [{"id": 1}], "status": "done"}))
    (root / "cells.jsonl").write_text((cells or json.dumps({"attempt": 1, "context": 60, "concurrency": 1,
                                                            "output_tok_s": 10.0, "requests": 1})) + "\n")
    (root / "responses.jsonl").write_text((responses or json.dumps(
        {"kind": "bench", "attempt": 1, "context": 60, "concurrency": 1, "problem": None})) + "\n")
    return root


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_deeply_nested_run_json_is_named_and_left_alone(tmp_path, deep):
    run = bench_folder(tmp_path / "run", run=deep)
    before = snapshot(run)
    one_error(ddtune(tmp_path, "report", str(run)), f"{run / 'run.json'}", "nested more than 100 levels")
    assert snapshot(run) == before


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_a_deeply_nested_bench_output_file_is_named(tmp_path, deep):
    path = tmp_path / "bench.json"
    path.write_text(deep)
    one_error(ddtune(tmp_path, "report", str(path)), str(path), "nested more than 100 levels")


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_deeply_nested_lines_of_a_run_are_skipped_like_torn_ones(tmp_path, deep):
    run = bench_folder(tmp_path / "run")
    with open(run / "cells.jsonl", "a") as fh:
        fh.write(deep + "\n")
    with open(run / "responses.jsonl", "a") as fh:
        fh.write(deep + "\n")
    before = snapshot(run)
    out = ddtune(tmp_path, "report", str(run))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert snapshot(run) == before


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_a_deeply_nested_responses_line_to_regrade_is_named(tmp_path, deep):
    path = tmp_path / "responses.jsonl"
    path.write_text(json.dumps({"problem": "fib", "content": "x"}) + "\n" + deep + "\n"
                    + json.dumps({"problem": "fib", "content": "y"}) + "\n")
    one_error(ddtune(tmp_path, "eval", "--regrade", str(path)), f"{path} line 2", "nested more than 100 levels")


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_a_deeply_nested_server_json_is_set_aside_not_a_traceback(tmp_path, deep):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "server.json").write_text(deep)
    out = ddtune(tmp_path, "status")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "nested more than 100 levels" in out.stderr


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_a_deeply_nested_lossless_baseline_is_named(tmp_path, deep):
    path = tmp_path / "greedy.json"
    path.write_text(deep)
    cfg = config(tmp_path, '[server]\nbackend = "endpoint"\nurl = "http://127.0.0.1:9"\n')
    out = ddtune(tmp_path, "--config", str(cfg), "check-lossless", "--baseline", str(path))
    one_error(out, str(path), "nested more than 100 levels")


@pytest.mark.parametrize("deep", [DEEP, DEEPISH], ids=["deep", "900"])
def test_a_deeply_nested_sweep_manifest_is_named_and_not_resumed(tmp_path, deep):
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "sweep.json").write_text(deep)
    (folder / "slots.jsonl").write_text("")
    before = snapshot(folder)
    out = ddtune(tmp_path, "sweep", "--resume", "--out", str(folder))
    one_error(out, str(folder / "sweep.json"), "nested more than 100 levels")
    assert snapshot(folder) == before and snapshot(tmp_path / "state") == {}


# --- "attempt": a list where the attempt id (a number) belongs ------------------------------------

def test_an_attempt_list_in_responses_is_named_when_regraded(tmp_path):
    run = bench_folder(tmp_path / "run", run=json.dumps({"kind": "eval", "attempts": [{"id": 1}], "status": "done"}),
                       responses=json.dumps({"kind": "eval", "attempt": [1, 2], "problem": "fib", "content": "x"}))
    before = snapshot(run)
    out = ddtune(tmp_path, "eval", "--regrade", str(run / "responses.jsonl"))
    one_error(out, f"{run / 'responses.jsonl'} line 1", '"attempt": expected an attempt id (an integer), got [1, 2]')
    assert snapshot(run) == before


@pytest.mark.parametrize("where", ["cells", "responses"])
def test_an_attempt_list_in_a_bench_run_is_named_by_report(tmp_path, where):
    bad = {"cells": json.dumps({"attempt": [1], "context": 60, "concurrency": 1, "output_tok_s": 1.0}),
           "responses": json.dumps({"kind": "bench", "attempt": [1], "context": 60, "concurrency": 1})}
    run = bench_folder(tmp_path / "run", **{where: bad[where]})
    before = snapshot(run)
    out = ddtune(tmp_path, "report", str(run))
    one_error(out, f"{run / (where + '.jsonl')}", '"attempt": expected an attempt id (an integer), got [1]')
    assert snapshot(run) == before

"""Property: whatever a file ddtune reads holds - random bytes, UTF-16, or TOML/JSON with values of
any type at the real field names - ddtune answers with exit 0 (the input happened to be valid), 1
or 2, and an error is one ``ddtune: error:`` line naming the file (plus one ``hint:`` line); never
a traceback.

The commands run in-process through ``tui.cli.main`` (or, for loaders no side-effect-free command
reaches, through ``tui.cli.report_errors``, the handler main uses), so each example costs
milliseconds; a few cases at the end run the real ``ddtune`` process.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import math
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.knobs import config as config_module
from backends.knobs.config import load_preset
from tests.helpers import run_cli, run_ddtune
from tui import cli
from workloads.grading.problems import load_problems
from workloads.sweep.spec import _BENCH, _TOP, build_plan

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- TOML documents with values of any type ------------------------------------------------------

def _escape(text: str) -> str:
    return "".join('\\"' if c == '"' else "\\\\" if c == "\\" else f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F
                   else c for c in text)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return f'"{_escape(value)}"'
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f'"{_escape(k)}" = {toml_value(v)}' for k, v in value.items()) + "}"


def toml_doc(doc: dict) -> str:
    return "".join(f'"{_escape(k)}" = {toml_value(v)}\n' for k, v in doc.items())


GOOD_STRINGS = ["sim", "sglang", "systemd", "endpoint", "none", "--flag", "--x", "X_VAR", "demo", "8", "true",
                "http://127.0.0.1:9", "--a 'b", "b8-t4-w2048", "fib",
                "http://[::1", "http://127.0.0.1:99999", "http://h:0", "::1", "[::1", "--api-key"]
LONG_STRINGS = st.integers(4000, 140_000).map(lambda n: "m" * n)  # past the bounds on names and argv strings
SCALARS = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(0, 70000), st.floats(),
                    st.text(max_size=12), st.sampled_from(GOOD_STRINGS), st.datetimes(), st.dates(), LONG_STRINGS)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                             max_size=3), max_leaves=6)


def table(names, values=VALUES, max_size=5):
    """A table whose keys are mostly the real field names (and now and then any text)."""
    return st.dictionaries(st.sampled_from(sorted(names)) | st.text(max_size=6), values, max_size=max_size)


ROUTES = table(config_module._MAP_FIELDS) | VALUES
KNOBS = st.builds(lambda knobs, routes: {**knobs, **({"map": routes} if routes is not None else {})},
                  table(["budget", "topk", "window", "mem"]), st.none() | table(["budget", "mem"], ROUTES, 3) | VALUES)
CONFIG_DOCS = st.fixed_dictionaries({}, optional={"server": table(config_module._SERVER_FIELDS) | VALUES,
                                                  "knobs": KNOBS | VALUES}) | table(["server", "knobs"])
PRESET_DOCS = st.fixed_dictionaries({}, optional={"knobs": KNOBS | VALUES}) | table(["knobs"])
PROBLEM = table(["id", "function", "signature", "prompt", "solution", "tests"], max_size=6)
PROBLEM_DOCS = st.fixed_dictionaries({"problem": st.lists(PROBLEM | VALUES, max_size=3) | VALUES}) | table(["problem"])
PLAN_DOCS = table(_TOP - {"bench", "config", "eval"}) | st.fixed_dictionaries({}, optional={
    "presets": st.lists(st.sampled_from(["b8-t4-w2048", "b4-t4-w2048"]) | st.text(max_size=6), max_size=2),
    "bench": table(_BENCH) | VALUES, "eval": table(["max_tokens", "concurrency", "problems"]) | VALUES,
    "config": st.lists(table(["name", "knobs"]) | VALUES, max_size=2) | VALUES})


def toml_files(docs) -> st.SearchStrategy[bytes]:
    """The document as UTF-8 (mostly), as UTF-16, or random bytes instead."""
    text = docs.map(toml_doc)
    return st.one_of(text.map(str.encode), text.map(str.encode), text.map(lambda t: t.encode("utf-16")),
                     st.binary(max_size=200))


@given(CONFIG_DOCS)
@settings(max_examples=40, deadline=None)
def test_the_toml_writer_writes_toml(doc):
    """The generator itself: every document it writes parses (else the loaders would see only syntax errors)."""
    assert set(tomllib.loads(toml_doc(doc))) == set(doc)


# --- running ddtune in-process ---------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def private_state(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DDTUNE_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
        yield


def ddtune(*argv: str) -> tuple[int, str, str]:
    done = run_cli(*argv)  # what the command changes for its process (umask, env, cwd) is put back
    return done.returncode, done.stdout, done.stderr


def guarded(load: Callable[[], object]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.report_errors(lambda: (load(), 0)[1])
    return code, err.getvalue()


def assert_clean(code: int, stderr: str, path: Path, not_about_the_file: tuple[str, ...] = ()) -> None:
    """Exit 0/1/2; an error is one line naming ``path`` (a file in it, for a folder) and its
    field, then at most a hint. ``not_about_the_file``: errors of valid input that refers to
    something else (a preset that does not exist, nothing to report)."""
    assert "Traceback" not in stderr
    assert code in (0, 1, 2), (code, stderr)
    # a note about a value left out of the file (shown as "-") names the file too; and a config without a
    # backend may say, in one line, which backend it runs (issue 32); then it is no error
    lines = [x for x in stderr.splitlines() if not (x.startswith("ddtune: warning: ") and str(path) in x)]
    if code == 0:
        assert all(line.startswith(f"ddtune: {path}: no [server] backend") for line in lines), stderr
        assert len(lines) <= 1, stderr
        return
    assert 1 <= len(lines) <= 2 and lines[0].startswith("ddtune: error: "), stderr
    assert len(lines) == 1 or lines[1].startswith("hint: "), stderr
    message = lines[0].removeprefix("ddtune: error: ")
    if any(s in message for s in not_about_the_file):
        return
    assert str(path) in message, stderr
    # "<file>[ line N]: <field>: <problem>" or "<file>: <what is wrong with the whole file>"
    assert ": " in message.split(str(path), 1)[1], stderr


def written(folder: str, name: str, data: bytes) -> Path:
    path = Path(folder) / name
    path.write_bytes(data)
    return path


@given(toml_files(CONFIG_DOCS))
@FUZZ
def test_config_file(data):
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "ddtune.toml", data)
        code, out, err = ddtune("status", "--config", str(path))
        assert_clean(code, err, path)
        assert code != 0 or out.startswith("backend:")


@given(toml_files(PRESET_DOCS))
@FUZZ
def test_knob_preset(data):
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "mine.toml", data)
        code, err = guarded(lambda: load_preset(str(path)))
        assert_clean(code, err, path)


@given(toml_files(PROBLEM_DOCS))
@FUZZ
def test_coding_problems_file(data):
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "coding.toml", data)
        code, err = guarded(lambda: load_problems(path))
        assert_clean(code, err, path)


@given(toml_files(PLAN_DOCS))
@FUZZ
def test_sweep_plan_file(data):
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "plan.toml", data)
        code, err = guarded(lambda: build_plan([], plan_file=str(path)))
        assert_clean(code, err, path, ("no configuration to sweep", "no such preset"))


# --- JSON run records ----------------------------------------------------------------------------------

JSON_SCALARS = st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats() | st.text(max_size=8)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
EXTREMES = st.sampled_from([0, 0.0, 5e-324, 1e-300, 1e300, 1.7976931348623157e308, 2**63 - 1, 2**63, 10**400])
NUMBERS = st.floats(min_value=-1, max_value=1e12) | st.integers(-1, 10**6) | EXTREMES | JSON_VALUES
DIST = table(["p50", "p95", "mean"], NUMBERS, 3) | JSON_VALUES
CELL = st.fixed_dictionaries({"context": st.sampled_from([1024, 4096]) | JSON_VALUES,
                              "concurrency": st.sampled_from([1, 8]) | JSON_VALUES}, optional={
    "output_tok_s": NUMBERS, "requests": NUMBERS, "errors": NUMBERS, "acceptance": DIST, "ttft_ms": DIST,
    "itl_ms": DIST, "verdicts": table(["pass", "fail"], NUMBERS, 2) | JSON_VALUES, "attempt": NUMBERS}) | JSON_VALUES
RESPONSE = table(["context", "concurrency", "ok", "output_tokens", "e2e_s", "spec_verify_ct", "attempt", "kind"],
                 NUMBERS | st.sampled_from(["bench", "eval"]), 6)
RUN = table(["kind", "sweep", "server", "summary"], JSON_VALUES) | st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["bench", "eval"]) | JSON_VALUES,
    "sweep": st.fixed_dictionaries({}, optional={"config": table(["name", "baseline"], JSON_VALUES, 2)}) | JSON_VALUES,
    "server": st.fixed_dictionaries({}, optional={"knobs": table(["budget", "topk", "window"], JSON_VALUES, 3)}),
    "summary": table(["pass", "fail"], NUMBERS, 2) | JSON_VALUES, "attempts": st.lists(table(["id"], NUMBERS, 1))})
SLOT = st.fixed_dictionaries({"slot": st.fixed_dictionaries({}, optional={
    "config": st.sampled_from(["a", "b"]) | JSON_VALUES, "repeat": NUMBERS, "key": st.just("s") | JSON_VALUES})
    | JSON_VALUES}, optional={"status": st.sampled_from(["done", "failed"]) | JSON_VALUES,
                              "bench_dir": st.none() | st.text(max_size=4), "reason": JSON_VALUES,
                              "finished_at": NUMBERS,
                              "server": table(["restarted", "restart_s", "phases"], NUMBERS, 3)})
SWEEP = st.fixed_dictionaries({}, optional={"plan": st.fixed_dictionaries({}, optional={
    "configs": st.lists(table(["name", "baseline"], st.sampled_from(["a", "b"]) | JSON_VALUES, 2), max_size=2)
    | JSON_VALUES}) | JSON_VALUES, "started_at": NUMBERS, "finished_at": NUMBERS}) | JSON_VALUES


# nested past any sane depth: json.loads' own limit (RecursionError), and depths it parses that a
# recursive walk of the value (repr, json.dumps, redact) would not survive
DEEP = st.builds(lambda n, obj: ('{"a": ' * n + "1" + "}" * n if obj else "[" * n + "]" * n).encode(),
                 st.integers(90, 120) | st.integers(900, 1000) | st.just(100_000), st.booleans())


def json_file(docs) -> st.SearchStrategy[bytes]:
    return st.one_of(docs.map(lambda d: json.dumps(d).encode()), docs.map(lambda d: json.dumps(d).encode()),
                     st.binary(max_size=120), DEEP)


def jsonl_file(records) -> st.SearchStrategy[bytes]:
    line = records.map(lambda r: json.dumps(r, ensure_ascii=False).encode()) | st.binary(max_size=40) | DEEP
    return st.one_of(st.lists(line, max_size=4).map(lambda lines: b"\n".join(lines) + b"\n"), st.binary(max_size=120))


BENCH_FOLDER = st.fixed_dictionaries({"run.json": json_file(RUN), "cells.jsonl": jsonl_file(CELL),
                                      "responses.jsonl": jsonl_file(RESPONSE)})


def write_folder(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        written(str(root), name, data)
    return root


REPORT_ERRORS_OF_VALID_INPUT = ("nothing to report",)


@given(BENCH_FOLDER, st.sampled_from(["md", "csv", "json"]))
@FUZZ
def test_report_on_a_bench_run_folder(files, fmt):
    with tempfile.TemporaryDirectory() as d:
        run = write_folder(Path(d) / "run", files)
        code, out, err = ddtune("report", str(run), "--format", fmt)
        assert_clean(code, err, run, REPORT_ERRORS_OF_VALID_INPUT)


@given(json_file(SWEEP), jsonl_file(SLOT), BENCH_FOLDER)
@FUZZ
def test_report_on_a_sweep_folder(sweep, slots, bench):
    with tempfile.TemporaryDirectory() as d:
        root = write_folder(Path(d) / "sweep", {"sweep.json": sweep, "slots.jsonl": slots})
        write_folder(root / "s" / "bench", bench)
        code, out, err = ddtune("report", str(root))
        assert_clean(code, err, root, REPORT_ERRORS_OF_VALID_INPUT)


@given(json_file(st.fixed_dictionaries({"run": RUN | JSON_VALUES, "cells": st.lists(CELL, max_size=3) | JSON_VALUES})
                 | JSON_VALUES))
@FUZZ
def test_report_on_a_bench_out_file(data):
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "bench.json", data)
        code, out, err = ddtune("report", str(path), "--format", "json")
        assert_clean(code, err, path, REPORT_ERRORS_OF_VALID_INPUT)
        assert code != 0 or json.loads(out)["schema"] == "ddtune.report/1"


@given(st.binary(max_size=400) | st.text(max_size=200).map(lambda t: (t + "compact_cache=True").encode()[:-2]),
       st.booleans())
@FUZZ
def test_inspect_any_log(data, as_json):
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "server.log", data)
        code, out, err = ddtune("inspect", str(path), *(["--json"] if as_json else []))
        assert (code, err) == (0, "")
        if as_json:
            assert {"draft", "fatal", "decode"} <= set(json.loads(out))
        else:
            assert out.startswith(f"log: {path}")


ANY_FINITE = (st.floats(min_value=0, allow_infinity=False)
              | st.sampled_from([0, 5e-324, 1e-300, 1e300, 1.7e308, 2**63 - 1]))
VALID_CELL = st.fixed_dictionaries({
    "context": st.just(1024), "concurrency": st.sampled_from([1, 8]), "output_tok_s": ANY_FINITE,
    "requests": st.integers(0, 2**63 - 1), "errors": st.integers(0, 2**63 - 1),
    "acceptance": st.fixed_dictionaries({"mean": ANY_FINITE}), "ttft_ms": st.fixed_dictionaries({"p50": ANY_FINITE}),
    "verdicts": st.dictionaries(st.sampled_from(["pass", "fail"]), st.integers(0, 2**63 - 1))})
VALID_RESPONSE = st.fixed_dictionaries({"context": st.just(1024), "concurrency": st.sampled_from([1, 8]),
                                        "output_tokens": ANY_FINITE, "e2e_s": ANY_FINITE, "spec_verify_ct": ANY_FINITE})


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.lists(VALID_CELL, min_size=1, max_size=3),
                          st.lists(VALID_RESPONSE, max_size=3)), min_size=1, max_size=3),
       st.sampled_from(["md", "csv", "json"]))
@FUZZ
def test_report_of_valid_records_with_extreme_numbers_renders(runs, fmt):
    """Records that pass the checks, with any finite numbers (1e300 next to 1e-300, counts near
    2**63): the statistics must not overflow into a traceback."""
    with tempfile.TemporaryDirectory() as d:
        folders = []
        for i, (name, cells, responses) in enumerate(runs):
            lines = lambda rows: b"".join(json.dumps(r).encode() + b"\n" for r in rows)  # noqa: E731
            folders.append(str(write_folder(Path(d) / f"run{i}", {
                "run.json": json.dumps({"kind": "bench", "sweep": {"config": {"name": name}}}).encode(),
                "cells.jsonl": lines(cells), "responses.jsonl": lines(responses)})))
        code, out, err = ddtune("report", *folders, "--format", fmt)
        assert (code, err) == (0, "") and out
        if fmt == "json":  # a figure past a float is left out (null), never written as Infinity or NaN
            json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in report --format json"))


RESPONSE_RECORD = table(["problem", "content", "reasoning_content", "finish_reason", "attempt"],
                        st.sampled_from(["fib", "gcd", "stop", "length"]) | JSON_VALUES, 4) | JSON_VALUES


@given(st.lists(RESPONSE_RECORD, max_size=3))
@FUZZ
def test_regrade_responses_file_of_json_lines(records):
    """Text only: binary input to --regrade is another engineer's fix (evaluate.read_responses)."""
    with tempfile.TemporaryDirectory() as d:
        path = written(d, "responses.jsonl", b"".join(json.dumps(r).encode() + b"\n" for r in records))
        code, out, err = ddtune("eval", "--regrade", str(path), "--json")
        assert_clean(code, err, path, ("unknown problem id",))


@given(st.text(max_size=40) | st.integers(200, 6000).map(lambda n: "p" * n) | st.sampled_from(["b8-t4-w2048", ""]))
@FUZZ
def test_any_preset_name(name):
    """A preset named on the command line: found, or one error line saying so (never ENAMETOOLONG)."""
    code, err = guarded(lambda: load_preset(name))
    assert "Traceback" not in err and code in (0, 2), (code, err)
    assert code == 0 or (err.startswith("ddtune: error: --preset ") and len(err.splitlines()) == 2), err
    assert len(err.splitlines()[0] if err else "") < 300


# --- the real process: a handful of cases --------------------------------------------------------------

@pytest.mark.parametrize("name, data, argv, field", [
    ("ddtune.toml", "[server]\nport = 1\n".encode("utf-16"), ["status", "--config", "{}"], "not a UTF-8 text file"),
    ("ddtune.toml", b'[server]\nextra_args = "--a \\"b"\n', ["status", "--config", "{}"], "[server] extra_args"),
    ("ddtune.toml", b"[knobs]\nmap = 5\n", ["bench", "--config", "{}"], "[knobs] map"),
    ("ddtune.toml", b'[server.env]\nX = "a\\u0000"\n', ["up", "--config", "{}"], "[server.env] X"),
    ("mine.toml", bytes(range(256)), ["up", "--preset", "{}"], "not a UTF-8 text file"),
    ("plan.toml", b"\xff\xfe", ["sweep", "--plan", "{}"], "not a UTF-8 text file"),
    ("bench.json", b"\x00\x01\xff", ["report", "{}"], "not a UTF-8 text file"),
])
def test_real_process_exits_2_with_one_line(tmp_path, name, data, argv, field):
    path = written(str(tmp_path), name, data)
    config = written(str(tmp_path), "endpoint.toml", b'[server]\nbackend = "endpoint"\nurl = "http://127.0.0.1:9"\n')
    argv = [a.format(path) for a in argv]
    if "--preset" in argv:
        argv += ["--config", str(config)]  # were the preset read, nothing would be spawned
    out = run_ddtune(*argv, DDTUNE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    first, hint = out.stderr.splitlines()
    assert first.startswith("ddtune: error: ") and f"{path}: {field}" in first and hint.startswith("hint: ")


def test_real_inspect_of_a_binary_file(tmp_path):
    path = written(str(tmp_path), "server.log", bytes(range(256)) * 4)
    out = run_ddtune("inspect", str(path))
    assert out.returncode == 0 and out.stderr == "" and out.stdout.startswith(f"log: {path}")


@pytest.mark.parametrize("manifest, slots, problem", [
    (b"\xff\xfe\x00", b"", "not a UTF-8 text file"),
    (b"[]", b"", "expected a JSON object"),
    (b'{"plan": 5}', b"", "plan: not a sweep plan ddtune wrote"),
    (b'{"plan": {"configs": [{"name": "a"}]}}', b"", "plan: not a sweep plan ddtune wrote"),
])
def test_real_sweep_resume_of_a_corrupt_sweep_folder(tmp_path, manifest, slots, problem):
    folder = tmp_path / "sweep"
    write_folder(folder, {"sweep.json": manifest, "slots.jsonl": slots})
    out = run_ddtune("sweep", "--resume", "--out", str(folder), DDTUNE_STATE_DIR=str(tmp_path / "state"),
                     XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    first, hint = out.stderr.splitlines()
    assert first.startswith(f"ddtune: error: {folder / 'sweep.json'}: {problem}") and hint.startswith("hint: ")

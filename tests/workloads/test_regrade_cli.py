"""`ddtune eval --regrade FILE [--json]` as a real process: verdicts in input order, no server."""

import json

from tests.helpers import run_cli, run_ddtune
from tests.workloads.sandbox_support import path_without_bwrap

FIB = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"
GCD_WRONG = "def gcd(a, b):\n    return a * b"


def fenced(code):
    return f"```python\n{code}\n```"


RECORDS = [
    {"problem": "fib", "content": fenced(FIB), "reasoning_content": "thinking", "finish_reason": "stop"},
    {"problem": "fib", "content": "", "reasoning_content": f"draft {fenced(FIB)}", "finish_reason": "stop"},
    {"problem": "gcd", "content": f"<think>{fenced(FIB)}</think>{fenced(GCD_WRONG)}", "reasoning_content": None,
     "finish_reason": "stop"},
    {"problem": "gcd", "content": "```python\ndef gcd(a, b):\n", "reasoning_content": None, "finish_reason": "length"},
    {"problem": "fib", "content": fenced("def fib(n):\n    while True:\n        pass"), "reasoning_content": None,
     "finish_reason": "stop"},
    {"problem": "fib", "content": fenced("def fib(n) return 1"), "reasoning_content": None, "finish_reason": "stop"},
]


def write(tmp_path, records, extra=""):
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + extra)
    return path


def test_regrade_json_reproduces_verdicts_in_order(tmp_path):
    out = run_cli("eval", "--regrade", str(write(tmp_path, RECORDS)), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [r["problem"] for r in doc["results"]] == [r["problem"] for r in RECORDS]
    assert [r["verdict"] for r in doc["results"]] == ["pass", "no_code", "fail", "truncated", "timeout", "error"]
    assert doc["summary"] == {"pass": 1, "fail": 1, "error": 1, "timeout": 1, "no_code": 1, "truncated": 1}
    assert all(r["detail"] for r in doc["results"])


def test_regrade_table_output(tmp_path):
    out = run_cli("eval", "--regrade", str(write(tmp_path, RECORDS[:3])))
    assert out.returncode == 0, out.stderr
    assert "pass 1/3" in out.stdout and "no_code" in out.stdout


def test_regrade_bad_line_names_line_and_exits_2(tmp_path):
    out = run_cli("eval", "--regrade", str(write(tmp_path, RECORDS[:1], "not json\n")))
    assert out.returncode == 2
    assert "line 2" in out.stderr and "--regrade" in out.stderr


def test_regrade_unknown_problem_exits_2(tmp_path):
    rec = dict(RECORDS[0], problem="no_such_problem")
    out = run_cli("eval", "--regrade", str(write(tmp_path, [rec])))
    assert out.returncode == 2 and "no_such_problem" in out.stderr


def test_regrade_missing_file_exits_2(tmp_path):
    out = run_cli("eval", "--regrade", str(tmp_path / "missing.jsonl"))
    assert out.returncode == 2 and "missing.jsonl" in out.stderr


def test_bad_numbers_exit_2_naming_the_option():
    out = run_cli("eval", "--max-tokens", "0")
    assert out.returncode == 2 and "--max-tokens" in out.stderr
    out = run_cli("eval", "--concurrency", "many")
    assert out.returncode == 2 and "--concurrency" in out.stderr


def test_default_url_comes_from_config_then_server_json(tmp_path, state_dir, monkeypatch):
    import argparse

    from tui.commands._options import server_url

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DDTUNE_API_KEY", raising=False)
    args = argparse.Namespace(url=None, api_key=None, config=None)
    assert server_url(args) == ("http://127.0.0.1:30000", None)
    (state_dir / "server.json").write_text(json.dumps(  # a whole record: it is read through its codec
        {"backend": "sim", "pid": None, "pgid": None, "host": "127.0.0.1", "port": 31005,
         "url": "http://127.0.0.1:31005", "config_hash": "x", "knobs": {}, "log_path": None, "started_at": 1.0}))
    assert server_url(args)[0] == "http://127.0.0.1:31005"
    (tmp_path / "ddtune.toml").write_text('[server]\nhost = "0.0.0.0"\nport = 31234\n')
    assert server_url(args)[0] == "http://127.0.0.1:31234"
    monkeypatch.setenv("DDTUNE_API_KEY", "k")
    assert server_url(argparse.Namespace(url="http://h:1", api_key=None, config=None)) == ("http://h:1", "k")


def test_regrade_skips_a_torn_last_line_with_a_note(tmp_path):
    path = write(tmp_path, RECORDS[:2], '{"problem": "fib", "content": "```python\\ndef fi')
    out = run_cli("eval", "--regrade", str(path), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)  # still one JSON document on stdout
    assert [r["verdict"] for r in doc["results"]] == ["pass", "no_code"]
    assert doc["skipped"]["torn_last_line"] == 3
    assert "skipped a torn last line (line 3): the run was interrupted while writing it" in out.stderr


def test_regrade_torn_line_in_the_middle_is_an_error_naming_it(tmp_path):
    path = write(tmp_path, RECORDS[:1], '{"problem": "fib", "cont\n' + json.dumps(RECORDS[1]) + "\n")
    out = run_cli("eval", "--regrade", str(path))
    assert out.returncode == 2 and "line 2: not JSON" in out.stderr and str(path) in out.stderr


def test_regrade_binary_garbage_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "garbage.bin"
    path.write_bytes(bytes(range(128, 256)) * 8 + b"\n\xff\xfe{\x00\x81")
    out = run_cli("eval", "--regrade", str(path))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    error = out.stderr.splitlines()[0]
    assert str(path) in error and "line 1: not UTF-8 text" in error


def test_regrade_skips_non_coding_bench_responses_and_counts_them(tmp_path):
    plain = {"kind": "bench", "problem": None, "content": "words " * 20, "reasoning_content": None,
             "finish_reason": "length", "context": 60, "concurrency": 1}
    path = write(tmp_path, [plain, RECORDS[0], plain, plain])
    out = run_cli("eval", "--regrade", str(path))
    assert out.returncode == 0, out.stderr
    assert "pass 1/1" in out.stdout and "skipped 3 non-coding responses" in out.stdout
    doc = json.loads(run_cli("eval", "--regrade", str(path), "--json").stdout)
    assert doc["skipped"] == {"non_coding": 3, "not_kept": 0, "torn_last_line": None}
    assert len(doc["results"]) == 1


def test_regrade_of_a_lone_file_with_several_attempts_asks_for_the_run_dir(tmp_path):
    path = write(tmp_path, [dict(RECORDS[0], kind="bench", attempt=1), dict(RECORDS[0], kind="bench", attempt=2)])
    out = run_cli("eval", "--regrade", str(path))
    assert out.returncode == 2 and "2 attempts" in out.stderr and "run directory" in out.stderr


def test_regrade_and_resume_together_is_a_usage_error(tmp_path):
    out = run_cli("eval", "--regrade", str(write(tmp_path, RECORDS[:1])), "--resume")
    assert out.returncode == 2 and "--resume" in out.stderr


def test_regrade_without_bubblewrap_grades_nothing_and_says_how_to_fix_it(tmp_path):
    marker = tmp_path / "ran"
    answer = fenced(f"open({str(marker)!r}, 'w').write('x')\n{FIB}")
    out = run_ddtune("eval", "--regrade", str(write(tmp_path, [{**RECORDS[0], "content": answer}])),
                     PATH=path_without_bwrap(tmp_path / "bin"))
    assert out.returncode == 2, out.stdout + out.stderr
    error, hint = out.stderr.splitlines()
    assert error == "ddtune: error: grading needs bubblewrap, and here bwrap not installed"
    assert hint.startswith("hint: install bubblewrap (apt-get install bubblewrap;")
    assert not marker.exists()  # the answer never ran


def test_a_graded_load_without_bubblewrap_stops_before_sending_anything(tmp_path):
    # nothing listens at the URL: had the load started, it would stop on the unreachable server instead
    out = run_ddtune("load", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--duration", "1",
                     PATH=path_without_bwrap(tmp_path / "bin"))
    assert out.returncode == 2, out.stdout + out.stderr
    error, hint = out.stderr.splitlines()
    assert error == "ddtune: error: grading needs bubblewrap, and here bwrap not installed"
    assert hint.startswith("hint: install bubblewrap (apt-get install bubblewrap;")

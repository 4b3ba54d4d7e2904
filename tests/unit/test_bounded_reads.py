"""Reads are bounded (issue 28, item 6): every file ddtune is handed goes through one door
(backends.core.datafile). A FIFO, a device, a socket or a file of /proc or /sys is refused by its
type before a byte is read; a file over its limit is refused before it is read (or, for a log,
streamed in bounded memory); a line over the line limit is skipped with a note. Each case is the
real ``ddtune`` process: exit 2 and one line naming the file, never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from backends.core.datafile import MAX_LINE, Lines, read_jsonl, read_text
from backends.core.errors import UsageError
from tests.helpers import REPO, ddtune_cmd, ddtune_env
from tests.unit.test_bad_input_cli import one_error

FIB = {"problem": "fib", "content": "```python\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
                                    "        a, b = b, a + b\n    return a\n```", "finish_reason": "stop"}

# Prints the peak RSS (KiB) of the one process it runs: a fresh parent, so no earlier child counts.
MEASURED = ("import resource, subprocess, sys\n"
            "out = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)\n"
            "sys.stdout.write(out.stdout); sys.stderr.write(out.stderr)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
            "sys.exit(out.returncode)\n")
SMALL_RSS_KIB = 200 * 1024  # ddtune itself runs in ~60 MB: a file read whole would be GBs


def env(tmp_path: Path) -> dict[str, str]:
    return ddtune_env(DDTUNE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))


def ddtune(tmp_path: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real process. ``timeout`` bounds a hang: a read that blocked would raise TimeoutExpired."""
    return subprocess.run(ddtune_cmd(*argv), env=env(tmp_path), cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def measured(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """(the process's result, its peak RSS in KiB)."""
    out = subprocess.run([sys.executable, "-c", MEASURED, *ddtune_cmd(*argv)], env=env(tmp_path), cwd=REPO,
                         capture_output=True, text=True, timeout=180)
    *lines, rss = out.stderr.splitlines()
    return subprocess.CompletedProcess(out.args, out.returncode, out.stdout, "".join(f"{x}\n" for x in lines)), int(rss)


def bench_run(root: Path, cells: Path | None = None, responses: Path | None = None) -> Path:
    """A bench run folder ``report`` reads; ``cells``/``responses``: a link to put there instead."""
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps({"kind": "bench", "status": "done"}))
    for name, target in (("cells.jsonl", cells), ("responses.jsonl", responses)):
        if target is None:
            (root / name).write_text(json.dumps({"context": 60, "concurrency": 1, "output_tok_s": 9.0}) + "\n"
                                     if name == "cells.jsonl" else "")
        else:
            (root / name).symlink_to(target)
    return root


def argv_for(command: str, path: Path, tmp_path: Path) -> list[str]:
    """The command line that makes ``command`` read ``path``."""
    if command == "report":  # a run folder whose cells.jsonl is that file
        return ["report", str(bench_run(tmp_path / "run", cells=path))]
    if command == "config":
        return ["status", "--config", str(path)]
    if command == "baseline":
        cfg = tmp_path / "endpoint.toml"
        cfg.write_text('[server]\nbackend = "endpoint"\nurl = "http://127.0.0.1:9"\n')
        return ["--config", str(cfg), "check-lossless", "--baseline", str(path)]
    return {"regrade": ["eval", "--regrade", str(path)], "inspect": ["inspect", str(path)]}[command]


COMMANDS = ["regrade", "inspect", "report", "config", "baseline"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_with_a_writer_that_never_writes_is_refused_at_once(tmp_path, command):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer holds it open and never writes
    try:
        out = ddtune(tmp_path, *argv_for(command, fifo, tmp_path))  # a blocked read: TimeoutExpired
    finally:
        os.close(writer)
    one_error(out, str(fifo) if command != "report" else str(tmp_path / "run" / "cells.jsonl"),
              "is a FIFO (named pipe), not a regular file")


def unix_socket(tmp_path: Path) -> Path:
    path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


@pytest.mark.parametrize("target, what", [
    ("/dev/zero", "is a character device"),
    ("/proc/self/mem", "is a file of the kernel's proc filesystem"),
    ("/proc/self/environ", "is a file of the kernel's proc filesystem"),
    ("/sys/kernel/mm/transparent_hugepage/enabled", "is a file of the kernel's sysfs filesystem"),
    ("socket", "is a socket"),
])
@pytest.mark.parametrize("command", ["regrade", "inspect", "report"])
def test_devices_sockets_and_kernel_files_are_refused_by_type(tmp_path, command, target, what):
    path = unix_socket(tmp_path) if target == "socket" else Path(target)
    if not path.exists():
        pytest.skip(f"{target} does not exist on this kernel")  # not flaky: a fact of the machine
    out = ddtune(tmp_path, *argv_for(command, path, tmp_path))
    named = str(tmp_path / "run" / "cells.jsonl") if command == "report" else str(path)
    one_error(out, named, what)
    assert out.stdout == ""


def test_a_link_named_like_a_proc_file_is_judged_by_what_it_opens(tmp_path):
    """A bind mount or a second /proc is found by the mount the open file is on, not by its name:
    here a link from an innocent name (the door follows links the user gives) to /proc/self/status."""
    link = tmp_path / "responses.jsonl"
    link.symlink_to("/proc/self/status")
    one_error(ddtune(tmp_path, "eval", "--regrade", str(link)), str(link), "kernel's proc filesystem")


def test_a_4gb_sparse_file_is_refused_before_a_byte_is_read(tmp_path):
    big = tmp_path / "responses.jsonl"
    subprocess.run(["truncate", "-s", "4G", str(big)], check=True)
    out, rss = measured(tmp_path, "eval", "--regrade", str(big))
    one_error(out, f"--regrade: {big}: larger than the 512 MiB ddtune reads from such a file (4 GiB)")
    assert rss < SMALL_RSS_KIB, rss
    run = bench_run(tmp_path / "run", responses=big)
    out, rss = measured(tmp_path, "report", str(run))
    one_error(out, f"{run / 'responses.jsonl'}: larger than the 512 MiB")
    assert rss < SMALL_RSS_KIB, rss


def test_inspect_streams_a_large_log_in_bounded_memory(tmp_path):
    """A server log may be big: inspect reads all of it (a sparse file of NULs: one endless line,
    cut at the splitter's 64 KB) without holding it."""
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        fh.write(b"[2026-01-01 10:00:00] Load weight begin. avail mem=70.00 GB\n")
        fh.truncate(300 * 1024**2)
    out, rss = measured(tmp_path, "inspect", str(log))
    assert out.returncode == 0 and out.stderr == "", out.stderr[-2000:]
    assert out.stdout.startswith(f"log: {log} (2 lines, 1 recognised)")  # the weight line, then the endless one
    assert rss < SMALL_RSS_KIB, rss


def test_a_huge_line_is_skipped_with_a_note_and_the_rest_is_graded(tmp_path):
    path = tmp_path / "responses.jsonl"
    with open(path, "w") as fh:
        fh.write(json.dumps(FIB) + "\n")
        fh.write('{"problem": "fib", "content": "' + "x" * (MAX_LINE + 10) + '"}\n')
        fh.write(json.dumps(FIB) + "\n")
    out, rss = measured(tmp_path, "eval", "--regrade", str(path), "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    assert [r["verdict"] for r in json.loads(out.stdout)["results"]] == ["pass", "pass"]
    assert f"--regrade: {path}: skipped line 2: longer than the 16 MiB ddtune reads as one line" in out.stderr
    assert rss < SMALL_RSS_KIB, rss


def test_report_skips_a_huge_cells_line_with_a_note(tmp_path):
    run = bench_run(tmp_path / "run")
    with open(run / "cells.jsonl", "a") as fh:
        fh.write('{"context": 60, "concurrency": 8, "x": "' + "y" * (MAX_LINE + 1) + '"}\n')
    out = ddtune(tmp_path, "report", str(run), "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr == f"ddtune: warning: {run / 'cells.jsonl'}: skipped line 2: longer than the 16 MiB " \
                         "ddtune reads as one line\n"
    assert json.loads(out.stdout)["schema"] == "ddtune.report/1"


# --- the door itself -----------------------------------------------------------------------------

def test_lines_skip_a_long_line_keep_counting_and_mark_an_unterminated_last_one(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"one\n" + b"x" * 50 + b"\nthree\n\nfive")
    lines = Lines(path, max_line=10)
    assert list(lines) == [(1, b"one"), (3, b"three"), (4, b""), (5, b"five")]
    assert lines.long_lines == [2] and lines.unterminated == 5
    assert lines.note() == f"{path}: skipped line 2: longer than the 10 bytes ddtune reads as one line"


def test_lines_over_the_limit_refuse_or_read_the_head_or_the_tail(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"one\ntwo\nthree\nfour\n")  # 19 bytes
    with pytest.raises(UsageError, match="larger than the 10 bytes ddtune reads from such a file"):
        Lines(path, UsageError, max_bytes=10)
    head = Lines(path, max_bytes=10, over="head")
    assert list(head) == [(1, b"one"), (2, b"two")] and head.cut  # "thr" was cut: no line
    tail = Lines(path, max_bytes=10, over="tail")
    assert list(tail) == [(1, b"four")] and not tail.numbered  # "ree" began before the tail
    assert tail.note() == f"{path}: read only its last 10 bytes of 19 bytes"


def test_read_jsonl_sets_bad_lines_aside_and_finds_binary(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\nnot json\n' + b"[" * 200 + b"]" * 200 + b"\n\xff\xfe\n[2]")
    found = read_jsonl(path)
    assert found.records == [(1, {"a": 1}), (5, [2])]
    assert found.bad == [(2, "not JSON"), (3, "nested more than 100 levels deep"), (4, "not UTF-8 text")]
    assert found.not_utf8 == 9 + 9 + 401  # the offset of the first byte that is not UTF-8


def test_read_text_refuses_before_reading_a_file_larger_than_its_limit(tmp_path):
    path = tmp_path / "big.toml"
    with open(path, "wb") as fh:
        fh.truncate(2 * 1024**3)
    with pytest.raises(UsageError, match=r"big.toml: larger than the 1 MiB .* \(2 GiB\)"):
        read_text(path, UsageError, max_bytes=1024**2)
